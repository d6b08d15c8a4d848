import Foundation
import Logging
import PostgresNIO
public import SeedSyncModel
import SeedSyncStore

extension PostgresSyncStore {
    /// Makes `schema` the newest version at the current revision (see
    /// `MaintainedSyncStore/upgrade(to:renaming:)`). The served tables must have the new shape
    /// already (the team's own `ALTER TABLE`; the store never adds, drops or changes a column of
    /// theirs); columns no field names are left unserved. A new type's table is created when it
    /// does not exist, then captured like an attached one: its rows get the current revision,
    /// without a change set (clients moving to the new version download the type whole).
    ///
    /// One transaction under the store's lock: writers wait for it, readers do not, and every
    /// server process serves the new version from its next request on.
    ///
    /// - Throws: `SchemaUpgradeError` for a change that cannot be made this way,
    ///   ``PostgresStoreError`` `tableMismatch` when a table does not have the new shape; nothing
    ///   is changed then.
    public func upgrade(to schema: DatasetSchema, renaming renames: [FieldRename] = []) async throws -> SchemaUpgrade {
        // Checked before the store's lock is taken (and again under it): writers never wait on a refusal.
        _ = try await schemaHistory().upgrading(to: schema, renaming: renames, at: .max)
        return try await upgrade(renaming: renames, checkingDefaults: true) { _, _ in schema }
    }

    /// ``upgrade(to:renaming:)`` with the new version read from the tables, after the team's own
    /// `ALTER TABLE`: columns of served tables that no field names become new fields (type,
    /// nullability and reference from the catalog, and the column's default when it is a
    /// constant), fields whose column is gone are dropped unless `renames` says they were renamed,
    /// and each table of `newTables` becomes a new type. Kept fields keep their defaults.
    ///
    /// ```swift
    /// // after: ALTER TABLE events ADD COLUMN notes text; ALTER TABLE events RENAME COLUMN title TO name
    /// let upgrade = try await store.upgradeFromTables(renaming: [FieldRename("events.title=name")!])
    /// ```
    ///
    /// - Parameters:
    ///   - newTables: tables to serve as new types.
    ///   - renames: the fields renamed since the newest version.
    ///   - schemaVersion: the new version's number; the newest plus one by default.
    public func upgradeFromTables(
        adding newTables: [String] = [], renaming renames: [FieldRename] = [], schemaVersion: Int? = nil
    ) async throws -> SchemaUpgrade {
        do {
            // Defaults read from the rows already: not checked against them a second time.
            return try await upgrade(renaming: renames, checkingDefaults: false) { [self] history, connection in
                try await tableSchema(
                    after: history.newest.schema, adding: newTables, renaming: renames, schemaVersion: schemaVersion,
                    on: connection)
            }
        } catch let error as SchemaUpgradeError where error.code == .noChange {
            let generated = try await generatedColumns()
            guard !generated.isEmpty else { throw error }
            throw SchemaUpgradeError(
                .noChange,
                "the tables have no new column to serve: \(generated.joined(separator: ", ")) \(generated.count == 1 ? "is a generated column" : "are generated columns"), which clients could not write, so never served"
            )
        }
    }

    /// The generated columns of the served tables, as `schema.table.column`.
    private func generatedColumns() async throws -> [String] {
        try await withConnection { [self] connection in
            var names: [String] = []
            for table in tables.values.sorted(by: { $0.type.name < $1.type.name }) {
                names += try await TableCheck.columns(of: table.table, on: connection, logger: logger)
                    .filter(\.isGenerated).map { "\(tableSchema).\(table.type.name).\($0.name)" }
            }
            return names
        }
    }

    /// The upgrade both entries share; `checkingDefaults`: the new fields' defaults are checked
    /// against the rows (``checkDefaults(of:added:on:)``), for a version that did not read them there.
    private func upgrade(
        renaming renames: [FieldRename], checkingDefaults: Bool,
        _ newSchema: @escaping @Sendable (SchemaHistory, PostgresConnection) async throws -> DatasetSchema
    ) async throws -> SchemaUpgrade {
        let upgrade = try await withTransaction { [self] connection in
            let state = try await query(
                "SELECT revision, \(PostgresSchemaRecords.newestColumn) FROM seedsync._state WHERE id = 1 FOR UPDATE",
                on: connection)
            let (revision, newest) = try state[0].decode((Int64, Int).self)
            // The versions in memory, read again only when another process upgraded since.
            let versions = try await served(newest: newest, on: connection).versions
            try versions.refuseUnreadable()
            let made = try versions.history.upgrading(
                to: try await newSchema(versions.history, connection), renaming: renames, at: revision)
            try PostgresTableSQL.checkNames(of: made.version.schema)
            try await prepareTables(for: made, at: revision, checkingDefaults: checkingDefaults, on: connection)
            try await PostgresSchemaRecords.insert(made.version, on: connection, logger: logger)
            // Read back as every server will read it, before the commit: a version no server
            // could read is never stored.
            try await PostgresSchemaRecords.readBack(made, after: versions.history, on: connection, logger: logger)
            return made
        }
        _ = try await schemaHistory()
        return upgrade
    }

    /// Checks every table against the new version and captures the new types' tables.
    private func prepareTables(
        for upgrade: SchemaUpgrade, at revision: Int64, checkingDefaults: Bool, on connection: PostgresConnection
    ) async throws {
        var created: [PostgresTableSQL] = []
        for type in upgrade.version.schema.types {
            let table = PostgresTableSQL(type: type, tableSchema: tableSchema)
            let isNew = upgrade.changes.contains(.typeAdded(type.name))
            if isNew, try await !Self.exists(table.table, on: connection, logger: logger) {
                for statement in table.create {
                    _ = try await connection.rows(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                created.append(table)
            }
            try await TableCheck(table: table, tableSchema: tableSchema).run(
                on: connection, logger: logger, allowingExtraColumns: true)
            guard isNew else {
                if checkingDefaults { try await checkDefaults(of: type, added: upgrade.changes, on: connection) }
                continue
            }
            for statement in CaptureSQL.attach(table) {
                _ = try await connection.rows(PostgresQuery(unsafeSQL: statement), logger: logger)
            }
            var binds = PostgresBindings()
            binds.append(revision)
            _ = try await connection.rows(
                PostgresQuery(unsafeSQL: CaptureSQL.adopt(table), binds: binds), logger: logger)
        }
        for table in created {
            for statement in table.foreignKeys(tableSchema: tableSchema) {
                _ = try await connection.rows(PostgresQuery(unsafeSQL: statement), logger: logger)
            }
        }
    }

    /// The schema the tables have now, as a version after `old` (see ``upgradeFromTables(adding:renaming:schemaVersion:)``).
    private func tableSchema(
        after old: DatasetSchema, adding newTables: [String], renaming renames: [FieldRename], schemaVersion: Int?,
        on connection: PostgresConnection
    ) async throws -> DatasetSchema {
        for name in newTables where !SchemaNames.isValid(name) {
            throw PostgresStoreError.tableMismatch(
                "'\(name.clippedForMessage)' cannot be a type name: table names must match ^[a-z][a-z0-9_]{0,62}$")
        }
        let served = Set(old.types.map(\.name) + newTables)
        var types: [EntityType] = []
        for type in old.types {
            let read = try await Self.entityType(
                type.name, tableSchema: tableSchema, served: served, on: connection, logger: logger)
            types.append(
                try await readType(type, from: read, renames: renames.filter { $0.type == type.name }, on: connection))
        }
        for name in newTables {
            let read = try await Self.entityType(
                name, tableSchema: tableSchema, served: served, on: connection, logger: logger)
            types.append(try await withDefaults(read, fields: read.fields, required: false, on: connection))
        }
        return DatasetSchema(
            dataset: old.dataset, schemaVersion: schemaVersion ?? old.schemaVersion + 1, types: types, scope: old.scope)
    }

    /// `old` as its table has it now: kept fields (under their new names when renamed) as they
    /// were, in their order, then the columns no field names as new fields.
    private func readType(
        _ old: EntityType, from read: EntityType, renames: [FieldRename], on connection: PostgresConnection
    ) async throws -> EntityType {
        var type = old
        type.fields = old.fields.compactMap { field in
            var kept = field
            kept.name = renames.first { $0.from == field.name }?.to ?? field.name
            return read.field(named: kept.name) == nil ? nil : kept
        }
        // A scoped type keeps its scope field, under its new name when renamed.
        type.scopedBy = old.scopedBy.map { scopedBy in renames.first { $0.from == scopedBy }?.to ?? scopedBy }
        let added = read.fields.filter { type.field(named: $0.name) == nil }
        let gone = old.fields.filter { field in
            !renames.contains { $0.from == field.name } && read.field(named: field.name) == nil
        }
        let withDefaults: EntityType
        do {
            withDefaults = try await self.withDefaults(read, fields: added, on: connection)
        } catch let error as PostgresStoreError where !gone.isEmpty {
            let names = gone.map { "\(old.name).\($0.name)" }.joined(separator: ", ")
            throw PostgresStoreError.tableMismatch(
                "\(error.description). If it is \(names) renamed, state the rename; a rename is never guessed")
        }
        type.fields += withDefaults.fields.filter { field in added.contains { $0.name == field.name } }
        return type
    }

    /// `type` with a default for each of `fields`, new columns: the value every row that needs one
    /// holds (see ``heldValues(of:in:on:)``), else the column's default when it is a constant. When
    /// `required` (new columns of a served table, which its rows already have), a field that is
    /// not nullable needs one.
    ///
    /// - Throws: ``PostgresStoreError`` `tableMismatch` naming the column and what to do: rows that
    ///   need a default hold different values (a volatile default filled them), or a `NOT NULL`
    ///   column has no default to give.
    private func withDefaults(
        _ type: EntityType, fields: [Field], required: Bool = true, on connection: PostgresConnection
    ) async throws -> EntityType {
        let name = "\(tableSchema).\(type.name)"
        let columns = try await TableCheck.columns(
            of: "\(quote(tableSchema)).\(quote(type.name))", on: connection, logger: logger)
        var type = type
        for index in type.fields.indices where fields.contains(where: { $0.name == type.fields[index].name }) {
            let field = type.fields[index]
            let column = columns.first { $0.name == field.name }
            let expression = column?.defaultExpression
            let held = required ? try await heldValues(of: field, in: type, on: connection) : []
            guard held.count <= 1 else {
                throw PostgresStoreError.tableMismatch(
                    "\(name).\(field.name) holds different values in rows last written before it was added (\(expression.map { "its default \($0) gave each row its own" } ?? "they were set without a change set")): older change sets, which lack it, cannot say which. Write those rows once so their values are logged (UPDATE \(name) SET \(field.name) = \(field.name)), then upgrade again"
                )
            }
            // No logged row needs it: the value the rows never logged hold, when they all hold one
            // (what the ALTER TABLE gave them: `now()` too), else the column's constant default.
            let unlogged =
                required && held.isEmpty ? try await heldValues(of: field, in: type, logged: false, on: connection) : []
            if let value = held.first ?? (unlogged.count == 1 ? unlogged.first : nil) {
                type.fields[index].default = value == .null ? nil : value
            } else {
                type.fields[index].default = column.flatMap { column in
                    expression.flatMap { ColumnDefault.constant($0, of: column, as: field.type) }
                }
            }
            if required, !field.nullable, type.fields[index].default == nil {
                throw PostgresStoreError.tableMismatch(
                    "\(name).\(field.name) is NOT NULL and has \(expression.map { "the default \($0), which is not a constant" } ?? "no default"): clients need one value for the rows that existed before it. Give the column a constant default or make it nullable, or state the new version in a schema file"
                )
            }
        }
        return type
    }

    /// Refuses a new field of `type` whose default is not the value the rows that need it hold
    /// (``heldValues(of:in:on:)``): a schema file that says otherwise would have clients see rows
    /// the table does not have.
    private func checkDefaults(of type: EntityType, added changes: [SchemaChange], on connection: PostgresConnection)
        async throws
    {
        for change in changes {
            guard case .fieldAdded(type.name, let name) = change, let field = type.field(named: name) else { continue }
            let held = try await heldValues(of: field, in: type, on: connection)
            let stated = field.default ?? .null
            guard held.allSatisfy({ $0 == stated }) else {
                let values = held.map { String(decoding: JSONWriter.bytes(of: $0), as: UTF8.self) }
                throw PostgresStoreError.tableMismatch(
                    "\(tableSchema).\(type.name).\(name): rows last written before it was added hold \(values.joined(separator: " and ")), which older change sets cannot carry, but the new version gives it the default \(field.default.map { String(decoding: JSONWriter.bytes(of: $0), as: UTF8.self) } ?? "null"). State the default they hold, or write those rows once so their values are logged (UPDATE \(tableSchema).\(type.name) SET \(name) = \(name)), then upgrade again"
                )
            }
        }
    }

    /// The distinct values (two at most) that the new column of `field` holds in the rows whose
    /// last change set in the log was written without it: rows written before the column was
    /// added, which a client of the new version gets from those change sets, the field taking its
    /// default. Their values are what PostgreSQL put there when the column was added (its default,
    /// or `NULL`), so the default served is exactly that; rows whose last change is no longer in
    /// the log reach clients through snapshots and column downloads, with their own values. Those
    /// rows' values instead when not `logged` (bulk revisions, compacted history).
    private func heldValues(
        of field: Field, in type: EntityType, logged: Bool = true, on connection: PostgresConnection
    ) async throws -> [JSONValue] {
        let table = PostgresTableSQL(type: type, tableSchema: tableSchema)
        let column = quote(field.name)
        var binds = PostgresBindings()
        binds.append(type.name)
        if logged { binds.append(field.name) }
        let log = "seedsync._changes c WHERE c.revision = r.revision AND c.type = $1 AND c.key = t.\(table.key)::text"
        let sql = """
            SELECT DISTINCT json_build_object('k', 0, 'v', t.\(column))::text FROM \(table.table) t
            JOIN \(table.revisions) r ON r.key = t.\(table.key) WHERE \(logged
                ? "EXISTS (SELECT FROM \(log) AND c.data IS NOT NULL AND (c.data::json -> $2) IS NULL)"
                : "NOT EXISTS (SELECT FROM \(log))") LIMIT 2
            """
        let name = "\(tableSchema).\(type.name)"
        return try await query(sql, binds, on: connection).map { row in
            let json = Array(try row.decode(String.self).utf8)
            let read = try WireRow.members(
                json: json, key: PrimaryKey(name: "k", type: .integer), fieldTypes: ["v": field.type], table: name)
            return read.attributes["v"] ?? .null
        }
    }
}

/// Column defaults PostgreSQL prints that are constants, as wire values: `'text'::text`, `42`,
/// `'1.5'::double precision`, `true`, `'2026-01-01 00:00:00+00'::timestamp with time zone`,
/// `'{"a": 1}'::jsonb`, `'{}'::integer[]` (an empty array; other array literals are not read).
/// Used for a new column no stored row tells a default for (see `heldValues`): the default the
/// schema then states. (An older client's new rows take the column's own default, `DEFAULT`.)
enum ColumnDefault {
    /// The constant `expression` stands for, for a field of `type` on `column`, or `nil` when it
    /// is not a constant of that type (a function call such as `now()` or `nextval(…)`).
    static func constant(_ expression: String, of column: TableCheck.Column, as type: FieldType) -> JSONValue? {
        let value = constant(expression, as: type, array: column.typeName.hasPrefix("_"))
        return value.flatMap { type.normalize($0) }
    }

    private static func constant(_ expression: String, as type: FieldType, array: Bool) -> JSONValue? {
        var text = expression.trimmingCharacters(in: .whitespaces)
        while text.hasPrefix("("), text.hasSuffix(")") { text = String(text.dropFirst().dropLast()) }
        var literal: String
        var quoted = false
        if text.hasPrefix("'"), let end = closingQuote(in: text) {
            literal = String(text[text.index(after: text.startIndex)..<end]).replacingOccurrences(of: "''", with: "'")
            quoted = true
            guard text[text.index(after: end)...].allSatisfy({ $0 != "(" }) else { return nil }
        } else {
            literal = String(text.prefix { $0 != ":" })
            guard text.dropFirst(literal.count).isEmpty || text.dropFirst(literal.count).hasPrefix("::") else {
                return nil
            }
        }
        switch type {
        case .text: return quoted || Double(literal) != nil ? .string(literal) : nil
        case .json:
            guard quoted else { return nil }
            if array { return literal == "{}" ? .array([]) : nil }  // an array column: only `'{}'` is read
            return (try? JSONParser.parse(Array(literal.utf8))).flatMap { $0 == .null ? nil : $0 }
        case .boolean: return literal == "true" ? .bool(true) : literal == "false" ? .bool(false) : nil
        case .integer: return Int64(literal).map(JSONValue.int)
        case .real: return Double(literal).flatMap { $0.isFinite ? .double($0) : nil }
        case .timestamp:
            literal = literal.replacingOccurrences(of: " ", with: "T")
            if literal.hasSuffix("+00") { literal = String(literal.dropLast(3)) + "Z" }
            return RFC3339.isValid(literal) ? .string(literal) : nil
        case .blob:
            guard quoted, literal.hasPrefix("\\x"), literal.count % 2 == 0 else { return nil }
            var bytes: [UInt8] = []
            var index = literal.index(literal.startIndex, offsetBy: 2)
            while index < literal.endIndex {
                let next = literal.index(index, offsetBy: 2)
                guard let byte = UInt8(literal[index..<next], radix: 16) else { return nil }
                bytes.append(byte)
                index = next
            }
            return .string(Data(bytes).base64EncodedString())
        }
    }

    /// The quote that closes the literal opening `text` (`''` is a quote inside it).
    private static func closingQuote(in text: String) -> String.Index? {
        var index = text.index(after: text.startIndex)
        while index < text.endIndex {
            if text[index] == "'" {
                let next = text.index(after: index)
                if next < text.endIndex, text[next] == "'" {
                    index = text.index(after: next)
                    continue
                }
                return index
            }
            index = text.index(after: index)
        }
        return nil
    }
}
