import Foundation
public import Logging
import PostgresNIO
public import SeedSyncModel

extension PostgresSyncStore {
    /// A schema file for existing tables, read from PostgreSQL's catalog: one type per table with
    /// its primary key, every other column as a field (type, nullability) and a reference for each
    /// single-column foreign key to another of the tables. Generated columns are left out: no
    /// client could write them. `seed-server schema` prints it, so a
    /// team does not write one by hand before `init --attach`.
    ///
    /// ```swift
    /// let schema = try await PostgresSyncStore.schema(at: location, tables: ["locations", "events"], dataset: "events")
    /// ```
    ///
    /// - Throws: ``PostgresStoreError`` with code `tableMismatch` naming a table that is missing,
    ///   has no single-column primary key, or a column whose type has no field type.
    public static func schema(
        at location: PostgresLocation,
        tables names: [String],
        tableSchema: String = "public",
        dataset: String,
        schemaVersion: Int = 1,
        logger: Logger = Logger(label: "seed-server.postgres")
    ) async throws -> DatasetSchema {
        for name in [tableSchema] + names where !SchemaNames.isValid(name) {
            throw PostgresStoreError.tableMismatch(
                "'\(name.clippedForMessage)' cannot be a type name: table names must match ^[a-z][a-z0-9_]{0,62}$")
        }
        return try await withConnection(to: location, logger: logger) { connection in
            var types: [EntityType] = []
            for name in names {
                types.append(
                    try await entityType(
                        name, tableSchema: tableSchema, served: Set(names), on: connection, logger: logger))
            }
            let schema = DatasetSchema(dataset: dataset, schemaVersion: schemaVersion, types: types)
            try schema.validate()
            return schema
        }
    }

    static func entityType(
        _ name: String, tableSchema: String, served: Set<String>, on connection: PostgresConnection, logger: Logger
    ) async throws -> EntityType {
        let table = "\(quote(tableSchema)).\(quote(name))"
        let columns = try await TableCheck.columns(of: table, on: connection, logger: logger)
        guard !columns.isEmpty else {
            throw PostgresStoreError.tableMismatch("there is no table \(tableSchema).\(name)")
        }
        let keys = try await TableCheck.primaryKey(of: table, on: connection, logger: logger)
        guard keys.count == 1, let keyColumn = columns.first(where: { $0.name == keys[0] }) else {
            throw PostgresStoreError.tableMismatch(
                "\(tableSchema).\(name) needs a primary key of one column to be served")
        }
        let keyType: KeyType
        switch keyColumn.typeName {
        case "int2", "int4", "int8": keyType = .integer
        case "text", "varchar": keyType = .text
        default:
            throw PostgresStoreError.tableMismatch(
                "\(tableSchema).\(name).\(keyColumn.name) is \(keyColumn.formattedType); a key must be an integer or text column (smallint, integer, bigint, text, varchar)"
            )
        }
        let references = try await foreignKeys(of: table, on: connection, logger: logger)
        var fields: [Field] = []
        // Generated columns are PostgreSQL's to compute: no client could write them.
        for column in columns where column.name != keyColumn.name && !column.isGenerated {
            guard let type = fieldType(of: column) else {
                throw PostgresStoreError.tableMismatch(
                    "\(tableSchema).\(name).\(column.name) is \(column.formattedType), which no field type maps to; leave the table out or change the column"
                )
            }
            let target = references[column.name].flatMap { served.contains($0) ? $0 : nil }
            fields.append(Field(name: column.name, type: type, nullable: !column.notNull, references: target))
        }
        return EntityType(name: name, primaryKey: PrimaryKey(name: keyColumn.name, type: keyType), fields: fields)
    }

    private static func fieldType(of column: TableCheck.Column) -> FieldType? {
        TableCheck.fieldType(of: column)
    }

    /// Single-column foreign keys of `table`: column name → referenced table name.
    private static func foreignKeys(of table: String, on connection: PostgresConnection, logger: Logger) async throws
        -> [String: String]
    {
        var binds = PostgresBindings()
        binds.append(table)
        let sql = """
            SELECT a.attname::text, c.confrelid::regclass::text FROM pg_constraint c
            JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
            WHERE c.conrelid = to_regclass($1) AND c.contype = 'f' AND cardinality(c.conkey) = 1
            """
        var references: [String: String] = [:]
        for (column, target) in try await connection.rows(
            PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger
        ).decode((String, String).self) {
            // regclass text is qualified only outside the search path, and quoted when needed.
            references[column] = target.split(separator: ".").last.map {
                String($0).replacingOccurrences(of: "\"", with: "")
            }
        }
        return references
    }
}
