import Foundation
package import GRDB
package import SeedSyncModel

/// The SQL of one entity type's table, shared by the server store and seed files.
///
/// Names are schema names, checked by `DatasetSchema.validate()` to match `^[a-z][a-z0-9_]{0,62}$`,
/// so quoting them is enough; values are always bound as arguments.
package struct TableSQL: Sendable {
    package let type: EntityType

    /// The statements run once per row, made once: building them on every call cost more than
    /// running them when change sets are small.
    package let insert: String
    package let upsert: String
    package let delete: String

    package init(type: EntityType) {
        self.type = type
        let table = quote(type.name)
        let key = quote(type.primaryKey.name)
        let names = [type.primaryKey.name] + type.fields.map(\.name) + [SchemaNames.revisionColumn]
        insert =
            "INSERT INTO \(table) (\(names.map(quote).joined(separator: ", "))) VALUES (\(placeholders(names.count)))"
        let assignments = names.dropFirst().map { "\(quote($0)) = excluded.\(quote($0))" }.joined(separator: ", ")
        upsert = insert + " ON CONFLICT (\(key)) DO UPDATE SET \(assignments)"
        delete = "DELETE FROM \(table) WHERE \(key) = ?"
    }

    package var table: String { quote(type.name) }
    package var key: String { quote(type.primaryKey.name) }

    /// Copies every row of the same table in the attached database `source` into `main`, a copied
    /// row winning over a row of the same key.
    package func upsertAll(from source: String) -> String {
        let assignments = ([SchemaNames.revisionColumn] + type.fields.map(\.name)).map {
            "\(quote($0)) = excluded.\(quote($0))"
        }.joined(separator: ", ")
        return
            "INSERT INTO main.\(table) (\(columns)) SELECT \(columns) FROM \(quote(source)).\(table) WHERE true ON CONFLICT (\(key)) DO UPDATE SET \(assignments)"
    }
    private var fieldColumns: [String] { type.fields.map { quote($0.name) } }
    /// Key, fields, revision: the column order of snapshots and writes.
    package var columns: String { ([key] + fieldColumns + [quote(SchemaNames.revisionColumn)]).joined(separator: ", ") }

    /// `CREATE TABLE` with typed columns and deferred foreign keys, then an index per reference.
    package var create: [String] { create(withoutRowID: false) }

    /// ``createTable(withoutRowID:)``, then ``createIndexes``.
    package func create(withoutRowID: Bool) -> [String] { [createTable(withoutRowID: withoutRowID)] + createIndexes }

    /// `CREATE TABLE` with typed columns and deferred foreign keys; with `withoutRowID`, a
    /// text-keyed table is a `WITHOUT ROWID` table, whose layout depends on its rows alone, not on
    /// the order they were inserted in.
    package func createTable(withoutRowID: Bool) -> String {
        let keyType = type.primaryKey.type == .integer ? "INTEGER" : "TEXT"
        var definitions = ["\(key) \(keyType) PRIMARY KEY NOT NULL"]
        for field in type.fields {
            var definition = "\(quote(field.name)) \(Self.columnType(field.type))"
            if !field.nullable { definition += " NOT NULL" }
            definitions.append(definition)
        }
        definitions.append("\(quote(SchemaNames.revisionColumn)) INTEGER NOT NULL")
        for field in type.fields {
            guard let target = field.references else { continue }
            definitions.append(
                "FOREIGN KEY (\(quote(field.name))) REFERENCES \(quote(target)) DEFERRABLE INITIALLY DEFERRED"
            )
        }
        let options = withoutRowID && type.primaryKey.type == .text ? " WITHOUT ROWID" : ""
        return "CREATE TABLE \(table) (\n  \(definitions.joined(separator: ",\n  "))\n)\(options)"
    }

    /// `CREATE INDEX` for every reference column.
    package var createIndexes: [String] {
        type.fields.filter { $0.references != nil }.map {
            "CREATE INDEX \(quote("\(type.name)_\($0.name)_index")) ON \(table) (\(quote($0.name)))"
        }
    }

    package var update: String {
        let assignments = (type.fields.map(\.name) + [SchemaNames.revisionColumn])
            .map { "\(quote($0)) = ?" }
            .joined(separator: ", ")
        return "UPDATE \(table) SET \(assignments) WHERE \(key) = ?"
    }

    package var exists: String { "SELECT 1 FROM \(table) WHERE \(key) = ?" }
    /// Key, fields and revision of the row whose key is `?`.
    package var row: String { "SELECT \(columns) FROM \(table) WHERE \(key) = ?" }
    /// The largest key, or 0 (integer keys).
    package var largestKey: String { "SELECT coalesce(max(\(key)), 0) FROM \(table)" }
    package var keys: String { "SELECT \(key) FROM \(table) ORDER BY \(key)" }

    /// A page of rows after the key `?` (when `after`), at most `?` rows; with `scoped`, only
    /// rows whose scope value is in the JSON array bound before the limit.
    package func snapshot(after: Bool, scoped: Bool = false) -> String {
        var conditions: [String] = []
        if after { conditions.append("\(key) > ?") }
        if scoped { conditions.append(scopeIsGranted) }
        let filter = conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND ")
        return "SELECT \(columns) FROM \(table)\(filter) ORDER BY \(key) LIMIT ?"
    }

    /// The first row's `column` and whether any row holds another value in it (another value or
    /// another storage class: `1` and `1.0` differ); with `scoped`, of the rows whose scope value is
    /// in the JSON array `?`, bound twice. No row when there are none. One pass over the table.
    package func uniformity(of column: String, scoped: Bool) -> String {
        let name = quote(column)
        let filter = scoped ? " WHERE \(scopeIsGranted)" : ""
        let also = scoped ? "\(scopeIsGranted) AND " : ""
        return """
            SELECT f.v, EXISTS (SELECT 1 FROM \(table) WHERE \(also)(\(name) IS NOT f.v OR typeof(\(name)) <> f.t)) \
            FROM (SELECT \(name) AS v, typeof(\(name)) AS t FROM \(table)\(filter) LIMIT 1) f
            """
    }

    /// The number of rows; with `scoped`, of the rows whose scope value is in the JSON array `?`.
    package func count(scoped: Bool) -> String {
        "SELECT count(*) FROM \(table)\(scoped ? " WHERE \(scopeIsGranted)" : "")"
    }

    /// An index of a scoped type's rows by scope value, then key (a seed's work file, cut by scope).
    package var createScopeIndex: String {
        "CREATE INDEX IF NOT EXISTS \(quote("_seedsync_scope_" + type.name)) ON \(table) (\(scopeColumn), \(key))"
    }

    /// The scope values of a scoped type's rows, each once.
    package var scopeValues: String { "SELECT DISTINCT \(scopeColumn) FROM \(table)" }

    /// The keys of the rows whose scope value is not in the JSON array `?` (a scoped type).
    package var keysOutsideScopes: String {
        "SELECT \(key) FROM \(table) WHERE \(scopeColumn) NOT IN (SELECT value FROM json_each(?)) ORDER BY \(key)"
    }

    /// The scope value of the row whose key is `?` (a scoped type).
    package var scopeOfRow: String { "SELECT \(scopeColumn) FROM \(table) WHERE \(key) = ?" }

    /// The scope column, quoted (the key for a shared type, never used then).
    private var scopeColumn: String { type.scopedBy.map(quote) ?? key }

    /// The scope value is one of the JSON array bound to `?`.
    private var scopeIsGranted: String { "\(scopeColumn) IN (SELECT value FROM json_each(?))" }

    /// The first row whose `field` holds the first `?` and whose scope value is not the second
    /// (a scoped type): a referrer left in another scope value by a row that moved.
    package func referrerOfOtherScope(through field: Field) -> String {
        "SELECT \(key) FROM \(table) WHERE \(quote(field.name)) = ? AND \(scopeColumn) <> ? LIMIT 1"
    }

    /// The first row whose `field` holds `?`.
    package func referrer(through field: Field) -> String {
        "SELECT \(key) FROM \(table) WHERE \(quote(field.name)) = ? LIMIT 1"
    }

    /// The first value of `field` that no row of `target` has as its key, read from the field's
    /// index (``createIndexes``): one lookup per distinct value, not one per row.
    package func danglingValue(through field: Field, target: TableSQL) -> String {
        let column = quote(field.name)
        return """
            SELECT d.v FROM (SELECT DISTINCT \(column) AS v FROM \(table) WHERE \(column) IS NOT NULL) d \
            WHERE NOT EXISTS (SELECT 1 FROM \(target.table) r WHERE r.\(target.key) = d.v) LIMIT 1
            """
    }

    package static func columnType(_ type: FieldType) -> String {
        switch type {
        case .integer, .boolean: "INTEGER"
        case .real: "REAL"
        case .text, .timestamp, .json: "TEXT"
        case .blob: "BLOB"
        }
    }
}

package func quote(_ name: String) -> String { "\"\(name)\"" }

private func placeholders(_ count: Int) -> String {
    Array(repeating: "?", count: count).joined(separator: ", ")
}

extension TableSQL {
    /// `ALTER TABLE … ADD COLUMN` for a field added by a schema upgrade, then its index when it is
    /// a reference: nullable fields as they are, others `NOT NULL` with their default (the value
    /// rows that exist get), a reference deferred like the ones `CREATE TABLE` declares.
    package func addColumn(_ field: Field) -> [String] {
        var definition = "\(quote(field.name)) \(Self.columnType(field.type))"
        if let value = field.default {
            if !field.nullable { definition += " NOT NULL" }
            definition += " DEFAULT \(Self.literal(value, as: field.type))"
        }
        if let target = field.references {
            definition += " REFERENCES \(quote(target)) DEFERRABLE INITIALLY DEFERRED"
        }
        var statements = ["ALTER TABLE \(table) ADD COLUMN \(definition)"]
        if field.references != nil {
            statements.append(
                "CREATE INDEX \(quote("\(type.name)_\(field.name)_index")) ON \(table) (\(quote(field.name)))")
        }
        return statements
    }

    /// `value`, a valid wire value of a field of `type`, as an SQL literal of the value it is stored as.
    package static func literal(_ value: JSONValue, as type: FieldType) -> String {
        switch ValueMapping.databaseValue(value, as: type).storage {
        case .null: return "NULL"
        case .int64(let number): return String(number)
        case .double(let number):
            let text = "\(number)"
            return text.contains(where: { $0 == "." || $0 == "e" }) ? text : text + ".0"
        case .string(let text): return "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
        case .blob(let data): return "X'" + data.map { String(format: "%02x", $0) }.joined() + "'"
        }
    }
}

/// A reference to a missing row: the referring type, its field, and the value that no row of the
/// field's target has as its key.
package struct DanglingReference {
    package let type: EntityType
    package let field: Field
    package let value: DatabaseValue
    /// The referenced type.
    package var target: String { field.references ?? "" }
}

extension TableSQL {
    /// The first reference of `types` (in their order, fields in theirs) to a missing row, read
    /// from the reference indexes (``danglingValue(through:target:)``), or `nil`.
    ///
    /// ```swift
    /// if let dangling = try TableSQL.firstDanglingReference(among: schema.types, tables: tables, in: db) {
    ///     print("\(dangling.type.name).\(dangling.field.name) references a missing \(dangling.target)")
    /// }
    /// ```
    package static func firstDanglingReference(
        among types: [EntityType], tables: [String: TableSQL], in db: Database
    ) throws -> DanglingReference? {
        for type in types {
            let table = tables[type.name]!
            for field in type.fields {
                guard let target = field.references else { continue }
                let missing = table.danglingValue(through: field, target: tables[target]!)
                if let value = try DatabaseValue.fetchOne(db, sql: missing) {
                    return DanglingReference(type: type, field: field, value: value)
                }
            }
        }
        return nil
    }
}
