import Foundation
public import Logging
import PostgresNIO
public import SeedSyncModel

extension PostgresSyncStore {
    /// Creates a table per type of `schema` in `tableSchema` (default `public`) and the `seedsync`
    /// bookkeeping, at revision 0, in one transaction: a failure leaves the database as it was.
    ///
    /// - Throws: ``PostgresStoreError`` with code `alreadyInitialized` when the database already
    ///   holds a SeedSync store or one of the tables (attach existing tables with
    ///   ``attach(at:schema:tableSchema:logger:)``), `SchemaError` for an invalid schema.
    public static func create(
        at location: PostgresLocation,
        schema: DatasetSchema,
        tableSchema: String = "public",
        logger: Logger = Logger(label: "seed-server.postgres")
    ) async throws {
        try schema.validate()
        let tables = schema.types.map { PostgresTableSQL(type: $0, tableSchema: tableSchema) }
        try await setUp(at: location, schema: schema, tableSchema: tableSchema, logger: logger) { connection in
            for table in tables {
                guard try await !exists(table.table, on: connection, logger: logger) else {
                    throw PostgresStoreError(
                        .alreadyInitialized,
                        "\(location) already has a table \(tableSchema).\(table.type.name); attach the existing tables instead of creating them, or drop it"
                    )
                }
                for statement in table.create {
                    try await connection.rows(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
            }
            for table in tables {
                for statement in table.foreignKeys(tableSchema: tableSchema) {
                    try await connection.rows(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
            }
        }
    }

    /// Adopts tables that already exist, one per type of `schema`, whose columns match the
    /// schema's fields (see `TableCheck`), in one transaction. It adds to them nothing but the
    /// capture triggers; their rows become one bulk revision (revision 1).
    ///
    /// - Returns: the bulk revision.
    /// - Throws: ``PostgresStoreError`` with code `tableMismatch` naming the table and column that
    ///   do not fit, `alreadyInitialized` when the database already holds a SeedSync store.
    @discardableResult
    public static func attach(
        at location: PostgresLocation,
        schema: DatasetSchema,
        tableSchema: String = "public",
        logger: Logger = Logger(label: "seed-server.postgres")
    ) async throws -> Int64 {
        try schema.validate()
        let tables = schema.types.map { PostgresTableSQL(type: $0, tableSchema: tableSchema) }
        return try await setUp(at: location, schema: schema, tableSchema: tableSchema, logger: logger) { connection in
            for table in tables {
                try await TableCheck(table: table, tableSchema: tableSchema).run(on: connection, logger: logger)
                try await connection.rows(
                    PostgresQuery(unsafeSQL: "LOCK TABLE \(table.table) IN SHARE ROW EXCLUSIVE MODE"), logger: logger)
                try await checkKeys(of: table, on: connection, logger: logger)
            }
        } adopt: { connection, revision in
            for table in tables {
                var binds = PostgresBindings()
                binds.append(revision)
                try await connection.rows(
                    PostgresQuery(unsafeSQL: CaptureSQL.adopt(table), binds: binds), logger: logger)
            }
        }
    }

    /// Refuses a table with an integer key outside ``DatasetSchema/committedKeys``: negative keys
    /// are the apps' temporary ones, and the rows apps push take keys after the largest, and would
    /// have none left past 2^62 − 1.
    static func checkKeys(of table: PostgresTableSQL, on connection: PostgresConnection, logger: Logger)
        async throws
    {
        guard let key = try await keyOutsideRange(of: table, in: table.table, on: connection, logger: logger) else {
            return
        }
        throw PostgresStoreError.tableMismatch(
            "\(table.table) holds the key \(key): \(DatasetSchema.keyRangeReason(key)), then attach again")
    }

    /// The smallest key of `source` (a table with `table`'s key column) below
    /// ``DatasetSchema/committedKeys``, else its largest above, else `nil`; text keys have no range.
    static func keyOutsideRange(
        of table: PostgresTableSQL, in source: String, on connection: PostgresConnection, logger: Logger
    ) async throws -> Int64? {
        guard table.type.primaryKey.type == .integer else { return nil }
        let rows = try await connection.rows(
            PostgresQuery(unsafeSQL: "SELECT min(\(table.key))::bigint, max(\(table.key))::bigint FROM \(source)"),
            logger: logger)
        for (smallest, largest) in try rows.decode((Int64?, Int64?).self) {
            if let smallest, smallest < 0 { return smallest }
            if let largest, largest > DatasetSchema.largestCommittedKey { return largest }
        }
        return nil
    }

    /// The transaction both `init`s share: `prepare` makes or checks the tables, then the
    /// bookkeeping and the triggers are created, the state row written at revision 0, and when
    /// there is an `adopt`, a bulk revision opened and handed to it.
    @discardableResult
    private static func setUp(
        at location: PostgresLocation,
        schema: DatasetSchema,
        tableSchema: String,
        logger: Logger,
        _ prepare: @escaping @Sendable (PostgresConnection) async throws -> Void,
        adopt: (@Sendable (PostgresConnection, Int64) async throws -> Void)? = nil
    ) async throws -> Int64 {
        try PostgresTableSQL.checkNames(of: schema)
        guard SchemaNames.isValid(tableSchema) else {
            throw PostgresStoreError.invalidLocation(
                "the table schema '\(tableSchema.clippedForMessage)' must match ^[a-z][a-z0-9_]{0,62}$")
        }
        let tables = schema.types.map { PostgresTableSQL(type: $0, tableSchema: tableSchema) }
        return try await withConnection(to: location, logger: logger) { connection in
            try await connection.rows("BEGIN", logger: logger)
            do {
                guard try await !exists("seedsync._state", on: connection, logger: logger) else {
                    throw PostgresStoreError(
                        .alreadyInitialized,
                        "\(location) already holds a SeedSync store (schema seedsync); serve it, or drop the schema seedsync to start again"
                    )
                }
                try await prepare(connection)
                try await createBookkeeping(
                    schema: schema, tableSchema: tableSchema, tables: tables, on: connection, logger: logger)
                var revision: Int64 = 0
                if let adopt {
                    for value in try await connection.rows("SELECT seedsync._bulk()", logger: logger).decode(
                        Int64.self)
                    {
                        revision = value
                    }
                    try await adopt(connection, revision)
                }
                try await connection.rows("COMMIT", logger: logger)
                return revision
            } catch {
                _ = try? await connection.rows("ROLLBACK", logger: logger)
                throw error
            }
        }
    }

    /// Creates the store's bookkeeping in the open transaction: the change log and its functions,
    /// the state row at revision 0, the schema and seed records, and the capture triggers of `tables`.
    private static func createBookkeeping(
        schema: DatasetSchema, tableSchema: String, tables: [PostgresTableSQL], on connection: PostgresConnection,
        logger: Logger
    ) async throws {
        let schemaJSON = String(decoding: try JSONEncoder.stable().encode(schema), as: UTF8.self)
        for statement in CaptureSQL.setup + CaptureSQL.pushRecords
            + (schema.scope == nil ? [] : CaptureSQL.scopeIndexes)
        {
            try await connection.rows(PostgresQuery(unsafeSQL: statement), logger: logger)
        }
        var binds = PostgresBindings()
        binds.append(CaptureSQL.format)
        binds.append(schemaJSON)
        binds.append(tableSchema)
        try await connection.rows(
            PostgresQuery(
                unsafeSQL: "INSERT INTO seedsync._state VALUES (1, $1, $2, $3, 0, 0)", binds: binds
            ), logger: logger)
        for statement in [PostgresSchemaRecords.createTable, PostgresSeedRecords.createTable] {
            _ = try await connection.rows(PostgresQuery(unsafeSQL: statement), logger: logger)
        }
        try await PostgresSchemaRecords.insert(
            SchemaVersion(schema: schema, revision: 0, renames: []), on: connection, logger: logger)
        for table in tables {
            for statement in CaptureSQL.attach(table) {
                try await connection.rows(PostgresQuery(unsafeSQL: statement), logger: logger)
            }
        }
    }

    /// Whether the table or view `name` (qualified) exists.
    static func exists(_ name: String, on connection: PostgresConnection, logger: Logger) async throws -> Bool {
        var binds = PostgresBindings()
        binds.append(name)
        for found in try await connection.rows(
            PostgresQuery(unsafeSQL: "SELECT to_regclass($1) IS NOT NULL", binds: binds), logger: logger
        ).decode(Bool.self) {
            return found
        }
        return false
    }
}
