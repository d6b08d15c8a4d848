package import SeedSyncModel

/// The SQL of one served table and its row revisions. Parameters are `$1`, `$2`, …; values are
/// always bound, names are schema names (quoted).
package struct PostgresTableSQL: Sendable {
    private(set) var type: EntityType
    /// `"public"."events"`: the served table.
    let table: String
    /// `seedsync."_rows_events"`: key and revision of every current row. Every name in `seedsync`
    /// starts with `_`, which no table name of the team's can be made to match by a role called
    /// `seedsync` (whose search path starts with the schema of its own name).
    let revisions: String
    /// `seedsync."_log_events"`.
    let captureFunction: String

    /// The longest type name PostgreSQL can serve: `_rows_` and the name fit in 63 bytes.
    static let maximumNameLength = 57
    /// `"id"`: the primary-key column.
    let key: String
    /// The table's columns as the catalog described them when the store read it, by name: what a
    /// written value is cast to (a `uuid`, an enum, a `jsonb`, an array). Empty for tables the store
    /// creates, whose column types follow from the fields.
    let columns: [String: TableCheck.Column]

    package init(type: EntityType, tableSchema: String, columns: [TableCheck.Column] = []) {
        self.type = type
        self.columns = Dictionary(columns.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        table = "\(quote(tableSchema)).\(quote(type.name))"
        revisions = "seedsync.\(quote("_rows_" + type.name))"
        captureFunction = "seedsync.\(quote("_log_" + type.name))"
        key = quote(type.primaryKey.name)
    }

    /// Refuses a schema whose names PostgreSQL cannot serve: a type name longer than
    /// ``maximumNameLength``. Every way a schema enters a PostgreSQL store checks it.
    static func checkNames(of schema: DatasetSchema) throws {
        if let long = schema.types.first(where: { $0.name.utf8.count > maximumNameLength }) {
            throw PostgresStoreError.tableMismatch(
                "the type name \(long.name) is longer than \(maximumNameLength) characters, which PostgreSQL cannot serve (its names end at 63 bytes)"
            )
        }
    }

    /// This table with the key and `fields` alone (``EntityType/selecting(_:)``): the shape of a
    /// column download's page.
    ///
    /// - Throws: ``SyncStoreError`` `unknownField` for a field the type does not have.
    func selecting(_ fields: [String]) throws(SyncStoreError) -> PostgresTableSQL {
        var selected = self
        selected.type = try type.selecting(fields)
        return selected
    }

    var keyColumnType: String { type.primaryKey.type == .integer ? "bigint" : "text" }

    /// What is wrong with the table as a served one, as an SQL expression: `NULL` when it has its
    /// five capture triggers, enabled, and a primary key of its key column alone; `'capture'` when
    /// a trigger is gone or disabled (the table was dropped and created again, or they were dropped
    /// or switched off: writes to it may not be logged), `'key'` when the primary key is gone or
    /// changed. Read in the statements that serve and write the table, see ``TableHealth``.
    var health: String {
        let name = literal(table)
        return """
            CASE WHEN (SELECT count(*) FROM pg_trigger WHERE tgrelid = to_regclass(\(name)) \
            AND tgname LIKE 'seedsync\\_%' AND tgenabled <> 'D') <> 5 THEN 'capture' \
            WHEN NOT EXISTS (SELECT FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0] \
            WHERE i.indrelid = to_regclass(\(name)) AND i.indisprimary AND i.indnatts = 1 \
            AND a.attname = \(literal(type.primaryKey.name))) THEN 'key' END
            """
    }

    /// `CREATE TABLE` for `init --schema`: the types a team would choose, deferred foreign keys,
    /// an index per reference column; for a type scoped by a field, one on (scope field, key)
    /// instead of that field's own, which serves a team's pages and counts and its references alike.
    var create: [String] {
        // Text keys in byte order, as the embedded store pages them.
        let collation = type.primaryKey.type == .text ? " COLLATE \"C\"" : ""
        var definitions = ["\(key) \(keyColumnType)\(collation) PRIMARY KEY"]
        for field in type.fields {
            definitions.append(
                "\(quote(field.name)) \(Self.columnType(field.type))\(field.nullable ? "" : " NOT NULL")")
        }
        var statements = ["CREATE TABLE \(table) (\n  \(definitions.joined(separator: ",\n  "))\n)"]
        if let scopedBy = type.scopedBy, scopedBy != type.primaryKey.name {
            statements.append("CREATE INDEX ON \(table) (\(quote(scopedBy)), \(key))")
        }
        for field in type.fields where field.references != nil && field.name != type.scopedBy {
            statements.append("CREATE INDEX ON \(table) (\(quote(field.name)))")
        }
        return statements
    }

    /// `ALTER TABLE … ADD FOREIGN KEY`, once every table exists.
    func foreignKeys(tableSchema: String) -> [String] {
        type.fields.compactMap { field in
            field.references.map { target in
                """
                ALTER TABLE \(table) ADD FOREIGN KEY (\(quote(field.name))) REFERENCES \(quote(tableSchema)).\(quote(target)) \
                DEFERRABLE INITIALLY DEFERRED
                """
            }
        }
    }

    static func columnType(_ type: FieldType) -> String {
        switch type {
        case .integer: "bigint"
        case .real: "double precision"
        case .text: "text"
        case .boolean: "boolean"
        case .timestamp: "timestamptz"
        case .blob: "bytea"
        case .json: "jsonb"
        }
    }

    /// How a bound wire value enters its column: timestamps as RFC 3339 text and JSON as its text,
    /// cast by PostgreSQL; text into a `uuid`, an enum or an exact `numeric` column cast to it; a
    /// JSON array into an array column element by element (one dimension).
    private func placeholder(_ index: Int, _ field: Field) -> String {
        let bound = "$\(index)"
        guard let column = columns[field.name] else {
            switch field.type {
            case .timestamp: return "CAST(\(bound) AS timestamptz)"
            case .json: return "CAST(\(bound) AS jsonb)"
            default: return bound
            }
        }
        switch (field.type, column.typeName) {
        case (.timestamp, _): return "CAST(\(bound) AS timestamptz)"
        case (.json, "json"), (.json, "jsonb"): return "CAST(\(bound) AS \(column.typeName))"
        case (.json, _):
            // `null` stays NULL; an array, element by element (an empty one is `{}`).
            return """
                CASE WHEN \(bound)::text IS NULL THEN NULL ELSE \
                (SELECT coalesce(array_agg(e), '{}') FROM jsonb_array_elements_text(CAST(\(bound) AS jsonb)) e) END::\(column.formattedType)
                """
        case (.text, "uuid"), (.text, "numeric"), (.text, "date"), (.text, "time"), (.text, "interval"):
            return "CAST(\(bound) AS \(column.formattedType))"
        case (.text, _) where column.isEnum: return "CAST(\(bound) AS \(column.formattedType))"
        default: return bound
        }
    }

    private var columnNames: [String] { ([type.primaryKey.name] + type.fields.map(\.name)).map(quote) }

    /// Key, then fields: `$1` … `$n`.
    var insert: String { insert(defaulting: []) }

    /// Key, then the fields but `defaulted`, which take the column's own default (`DEFAULT`): `$1`
    /// … `$n` as ``binds(_:skipping:)`` gives them.
    func insert(defaulting defaulted: Set<String>) -> String {
        var columns = [key]
        var values = ["$1"]
        for field in type.fields where !defaulted.contains(field.name) {
            columns.append(quote(field.name))
            values.append(placeholder(values.count + 1, field))
        }
        return "INSERT INTO \(table) (\(columns.joined(separator: ", "))) VALUES (\(values.joined(separator: ", ")))"
    }

    /// Every row of the table `source` (same columns), replacing the row of an existing key.
    func upsert(from source: String) -> String {
        let columns = columnNames.joined(separator: ", ")
        let assignments = type.fields.map { "\(quote($0.name)) = excluded.\(quote($0.name))" }
        let conflict = assignments.isEmpty ? "DO NOTHING" : "DO UPDATE SET \(assignments.joined(separator: ", "))"
        return "INSERT INTO \(table) (\(columns)) SELECT \(columns) FROM \(source) ON CONFLICT (\(key)) \(conflict)"
    }

    /// Key `$1`, then fields.
    var update: String {
        let assignments = type.fields.enumerated().map { "\(quote($1.name)) = \(placeholder($0 + 2, $1))" }
        guard !assignments.isEmpty else { return "UPDATE \(table) SET \(key) = \(key) WHERE \(key) = $1" }
        return "UPDATE \(table) SET \(assignments.joined(separator: ", ")) WHERE \(key) = $1"
    }

    var delete: String { "DELETE FROM \(table) WHERE \(key) = $1" }
    /// The revision of the row whose key is `$1`.
    var revision: String { "SELECT revision FROM \(revisions) WHERE key = $1" }
    /// The row whose key is `$1` as a snapshot page reads it: its revision, then `t.*`.
    var row: String {
        "SELECT (SELECT v.revision FROM \(revisions) v WHERE v.key = t.\(key)), t.* FROM \(table) t WHERE t.\(key) = $1"
    }
    /// The key column's sequence (a `serial` or identity column), or NULL.
    var keySequence: String { "SELECT pg_get_serial_sequence(\(literal(table)), \(literal(type.primaryKey.name)))" }

    /// The next key from the sequence `$1`, moved past the largest key in use first when it is
    /// behind (rows loaded or written with explicit keys), so the team's own inserts keep drawing
    /// free keys too.
    var nextSequenceKey: String {
        "SELECT setval($1::regclass, greatest(nextval($1::regclass), (SELECT coalesce(max(\(key)), 0) + 1 FROM \(table))))"
    }

    /// The last of `$2` new keys for type `$1`, without a sequence: after the largest key in use
    /// and the largest ever deleted or given out (`seedsync._keys`), so a client's reference to a
    /// deleted row never comes to point at a new one.
    var reserveKeys: String {
        """
        INSERT INTO seedsync._keys AS k (type, last) SELECT $1, greatest(coalesce(max(\(key)), 0), 0) + $2 FROM \(table)
        ON CONFLICT (type) DO UPDATE SET last = greatest(k.last, excluded.last - $2) + $2 RETURNING last
        """
    }
    var exists: String { "SELECT 1 FROM \(table) WHERE \(key) = $1" }
    var keys: String { "SELECT \(key) FROM \(table) ORDER BY \(key)" }
    var count: String { "SELECT count(*) FROM \(table)" }

    /// The number of rows; with `scoped`, of the rows whose scope value is in the array `$1`.
    package func count(scoped: Bool) -> String {
        scoped ? "SELECT count(*) FROM \(table) t WHERE \(scopeIsGranted(1, in: "t"))" : count
    }

    /// The state's revision and newest version, the table's health, whether every row holds the
    /// first row's value in each of `columns` (as a `boolean[]`, their text compared: one value of
    /// two spellings counts as two), then the first row's cells (`p.*`, `NULL` when there is no
    /// row); with `scoped`, of the rows whose scope value is in the array `$1`. One statement, so
    /// one snapshot; one pass over the table per column.
    func uniformity(of columns: [String], scoped: Bool) -> String {
        let filter = scoped ? "WHERE \(scopeIsGranted(1, in: "t")) " : ""
        let also = scoped ? "\(scopeIsGranted(1, in: "u")) AND " : ""
        let checks = columns.map {
            "NOT EXISTS (SELECT FROM \(table) u WHERE \(also)u.\(quote($0))::text IS DISTINCT FROM p.\(quote($0))::text)"
        }
        return """
            SELECT s.revision, \(PostgresSchemaRecords.newestColumn), \(health), ARRAY[\(checks.joined(separator: ", "))]::boolean[], p.*
            FROM seedsync._state s LEFT JOIN LATERAL (SELECT t.* FROM \(table) t \(filter)LIMIT 1) p ON true WHERE s.id = 1
            """
    }

    /// The scope column of `alias` (a scoped type) holds one of the values of the array bound to
    /// `$index`: the array is cast to the column's type where that is not the bound one (an
    /// attached table's `uuid` or enum column), so the column's index serves the condition.
    func scopeIsGranted(_ index: Int, in alias: String) -> String {
        let name = type.scopedBy ?? type.primaryKey.name
        let column = "\(alias).\(quote(name))"
        guard let found = columns[name],
            ["uuid", "numeric", "date", "time", "interval"].contains(found.typeName) || found.isEnum
        else { return "\(column) = ANY($\(index))" }
        return "\(column) = ANY(CAST($\(index) AS \(found.formattedType)[]))"
    }

    /// The scope value of the row whose key is `$1` (a scoped type), as text.
    var scopeOfRow: String {
        "SELECT \(quote(type.scopedBy ?? type.primaryKey.name))::text FROM \(table) WHERE \(key) = $1"
    }

    /// The first row whose `field` holds `$1` and whose scope value is not the text `$2` (a scoped
    /// type): a referrer left in another scope value by a row that moved.
    func referrerOfOtherScope(through field: Field) -> String {
        let scope = quote(type.scopedBy ?? type.primaryKey.name)
        return "SELECT \(key)::text FROM \(table) WHERE \(quote(field.name)) = $1 AND \(scope)::text <> $2 LIMIT 1"
    }

    /// The first row whose `field` holds `$1`.
    func referrer(through field: Field) -> String {
        "SELECT \(key)::text FROM \(table) WHERE \(quote(field.name)) = $1 LIMIT 1"
    }

    /// The first row whose `field` points at a missing row of `target`.
    func dangling(through field: Field, target: PostgresTableSQL) -> String {
        let column = "t.\(quote(field.name))"
        return """
            SELECT t.\(key)::text, \(column)::text FROM \(table) t LEFT JOIN \(target.table) r ON r.\(target.key) = \(column) \
            WHERE \(column) IS NOT NULL AND r.\(target.key) IS NULL LIMIT 1
            """
    }

    /// One consistent read of a snapshot page: the state's revision and newest schema version, then up to `$n` rows after
    /// key `$1` when `after`, each as its row revision and the table's columns (`t.*`, so a column
    /// added under the store shows, see ``WireRow/positions(in:from:of:table:)``). The state row
    /// comes even with no rows. The page is cut on the key's index first, then each row's
    /// revision is looked up by key, so the cost follows the page (a join would let the planner
    /// merge from the start of the revisions' index).
    ///
    /// With `scoped`, only the rows whose scope value is in the array bound before the limit.
    package func snapshot(after: Bool, scoped: Bool = false) -> String {
        var conditions: [String] = []
        if after { conditions.append("t.\(key) > $1") }
        if scoped { conditions.append(scopeIsGranted(conditions.count + 1, in: "t")) }
        let filter = conditions.isEmpty ? "" : "WHERE \(conditions.joined(separator: " AND ")) "
        return """
            SELECT s.revision, \(PostgresSchemaRecords.newestColumn), \(health), (SELECT v.revision FROM \(revisions) v WHERE v.key = p.\(key)), p.*
            FROM seedsync._state s
            LEFT JOIN LATERAL (
              SELECT t.* FROM \(table) t \(filter)ORDER BY t.\(key) LIMIT $\(conditions.count + 1)
            ) p ON true WHERE s.id = 1 ORDER BY p.\(key)
            """
    }
}
