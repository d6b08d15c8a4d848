import Foundation
public import Logging
import NIOCore
import NIOPosix
package import PostgresNIO
public import SeedSyncModel
public import SeedSyncStore

/// The PostgreSQL store: serves tables in a PostgreSQL database, written by `seed-server` or by any
/// other program, with the bookkeeping in a `seedsync` schema beside them (see `CaptureSQL`).
///
/// Every `seed-server` process in front of one database is stateless: the revision counter, the
/// change log and the row revisions are all in PostgreSQL, and triggers capture every write, so
/// several servers and direct SQL writers can run at once.
///
/// The store lives inside ``withStore(at:maximumConnections:leaseTimeout:logger:_:)``, which runs its
/// connection pool for the duration:
///
/// ```swift
/// let location = try PostgresLocation(url: "postgres://app@127.0.0.1/catalog", password: password)
/// try await PostgresSyncStore.withStore(at: location) { store in
///     let revision = try await store.commit(changeSet)
/// }
/// ```
public final class PostgresSyncStore: SyncStore {
    public let location: PostgresLocation
    let client: PostgresClient
    let logger: Logger
    let tableSchema: String
    /// The schema versions and the newest version's tables: replaced whole when a state read shows
    /// a newer version (an upgrade by this process, another one, or `seed-server schema upgrade`).
    let servedTables: LockedValue<ServedPostgresTables>
    /// The longest a request waits for a pooled connection before it fails as unavailable.
    let leaseTimeout: Duration
    /// The change feed's shared state and log reads, and the change sets already assembled
    /// (64 MiB at most), served again without reading their rows.
    let feedReads = ChangeFeedReads()
    /// The history chain values this process has read (see `HistoryLedger`).
    package let chainCache = HistoryChainCache()
    /// The tables found locked by another session lately (see ``lockTimeout(of:_:)``).
    let lockedTables = LockedTables()

    private init(
        location: PostgresLocation, client: PostgresClient, logger: Logger, state: StoredState, leaseTimeout: Duration
    ) {
        self.location = location
        self.leaseTimeout = leaseTimeout
        self.client = client
        self.logger = logger
        tableSchema = state.tableSchema
        servedTables = LockedValue(state.served)
    }

    /// The newest schema version's schema: the shape of the served tables.
    public var schema: DatasetSchema { servedTables.get().schema }
    var tables: [String: PostgresTableSQL] { servedTables.get().tables }

    /// The served versions as of a state read that saw `newest` as the newest version number:
    /// the ones in memory, or the history read again when a newer version was made since.
    package func served(newest: Int, on connection: PostgresConnection) async throws -> ServedPostgresTables {
        let current = servedTables.get()
        guard newest != current.versions.storedNewest else { return current }
        let fresh = try await ServedPostgresTables.read(tableSchema: tableSchema, on: connection, logger: logger)
        // Only to a newer history: a connection that read an older state keeps its own.
        servedTables.set(fresh) { $0.versions.storedNewest > $1.versions.storedNewest }
        return fresh
    }

    /// Takes the store's lock (the `_state` row every captured write takes, held to the end of the
    /// transaction) and returns the served versions as of it: no upgrade can come in between.
    func lockServed(on connection: PostgresConnection) async throws -> ServedPostgresTables {
        let rows = try await query(
            "SELECT \(PostgresSchemaRecords.newestColumn) FROM seedsync._state WHERE id = 1 FOR UPDATE", on: connection)
        return try await served(newest: try rows[0].decode(Int.self), on: connection)
    }

    /// The served versions, refreshed when the store's newest version changed (one query).
    func currentServed(on connection: PostgresConnection) async throws -> ServedPostgresTables {
        let rows = try await query("SELECT \(PostgresSchemaRecords.newestColumn)", on: connection)
        return try await served(newest: try rows[0].decode(Int.self), on: connection)
    }

    /// Opens the store at `location` and runs `body` with it; the pool stops when `body` returns.
    ///
    /// - Parameters:
    ///   - location: the database holding the store.
    ///   - maximumConnections: the pool's connections at most.
    ///   - leaseTimeout: the longest a request waits for a pooled connection (while PostgreSQL is
    ///     down or every connection is busy) before it fails as `storeUnavailable` (503).
    ///   - logger: where the pool and the store log.
    ///   - body: what runs with the store.
    /// - Throws: ``PostgresStoreError`` with code `unreachable` when PostgreSQL cannot be reached
    ///   or refuses the login, `notInitialized` when the database holds no SeedSync store,
    ///   `tableMismatch` when a served table no longer matches the schema (a column added, dropped
    ///   or retyped by another program) or its capture triggers are missing or disabled.
    public static func withStore<T: Sendable>(
        at location: PostgresLocation,
        maximumConnections: Int = 20,
        leaseTimeout: Duration = .seconds(5),
        logger: Logger = Logger(label: "seed-server.postgres"),
        _ body: @Sendable (PostgresSyncStore) async throws -> T
    ) async throws -> T {
        // One connection first: an unreachable server, a refused login or a database without a
        // store is one clear error at once, not a pool retrying in the background.
        let state = try await withConnection(to: location, logger: logger) { connection in
            var state = try await StoredState.read(on: connection, location: location, logger: logger)
            do {
                // The bookkeeping a store made before it lacks, made by one process at a time (two
                // servers starting together would both try, and `IF NOT EXISTS` is no lock).
                try await connection.rows("BEGIN", logger: logger)
                try await connection.rows("SELECT pg_advisory_xact_lock(hashtext('seedsync.setup'))", logger: logger)
                for statement in CaptureSQL.pushRecords + [
                    Self.createChainTable, PostgresSeedRecords.createTable, PostgresSeedRecords.addColumns,
                    CaptureSQL.revisionFunction,
                    CaptureSQL.addScopeColumns,
                ] {
                    _ = try await connection.rows(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await PostgresSchemaRecords.prepare(on: connection, logger: logger)
                try await pinSettings(of: state.served.tables.values, on: connection, logger: logger)
                try await connection.rows("COMMIT", logger: logger)
                state.served = try await ServedPostgresTables.read(
                    tableSchema: state.tableSchema, on: connection, logger: logger)
                for broken in state.served.versions.unreadable {
                    logger.error(
                        "schema version not served",
                        metadata: ["version": "\(broken.number)", "error": "\(broken.reason)"])
                }
            } catch let error as PSQLError {
                _ = try? await connection.rows("ROLLBACK", logger: logger)
                throw PostgresStoreError.connection(error, location: location)
            }
            for type in state.served.schema.types {
                try await TableCheck(
                    table: PostgresTableSQL(type: type, tableSchema: state.tableSchema), tableSchema: state.tableSchema
                )
                .runServed(on: connection, logger: logger)
            }
            return state
        }
        return try await withClient(at: location, maximumConnections: maximumConnections, logger: logger) { client in
            try await body(
                PostgresSyncStore(
                    location: location, client: client, logger: logger, state: state, leaseTimeout: leaseTimeout))
        }
    }

    /// Pins ``CaptureSQL/sessionSettings`` on the capture functions of `tables` that were made
    /// before one of the settings joined them.
    private static func pinSettings(
        of tables: some Sequence<PostgresTableSQL>, on connection: PostgresConnection, logger: Logger
    ) async throws {
        let pinned = CaptureSQL.sessionSettings.map { "\($0.0)=\($0.1)".lowercased() }
        for table in tables {
            var binds = PostgresBindings()
            binds.append(table.captureFunction)
            let rows = try await connection.rows(
                PostgresQuery(
                    unsafeSQL: "SELECT coalesce(proconfig, '{}')::text[] FROM pg_proc WHERE oid = to_regproc($1)",
                    binds: binds), logger: logger)
            for config in try rows.decode([String].self) {
                guard !Set(pinned).isSubset(of: config.map { $0.lowercased() }) else { continue }
                for statement in CaptureSQL.pinSettings(table) {
                    _ = try await connection.rows(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
            }
        }
    }

    /// Runs `body` with one connection to `location`, closed afterwards.
    ///
    /// - Throws: ``PostgresStoreError`` for PostgreSQL's own errors, in one actionable line.
    static func withConnection<T: Sendable>(
        to location: PostgresLocation,
        logger: Logger,
        _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        do {
            let connection = try await PostgresConnection.connect(
                configuration: location.connectionConfiguration(), id: 0, logger: logger)
            do {
                let result = try await body(connection)
                try? await connection.close()
                return result
            } catch {
                try? await connection.close()
                throw error
            }
        } catch let error as PSQLError {
            throw PostgresStoreError.connection(error, location: location)
        } catch is ClosedConnection {
            throw PostgresStoreError(
                .unreachable, "the connection to PostgreSQL at \(location) closed; check that it runs, then try again")
        }
    }

    /// Runs `body` with a connection pool to `location`, running for the duration.
    static func withClient<T: Sendable>(
        at location: PostgresLocation,
        maximumConnections: Int,
        logger: Logger,
        _ body: @Sendable (PostgresClient) async throws -> T
    ) async throws -> T {
        // The pool warns when a lease comes before `run()` has started, which the task group
        // cannot order; failures reach the caller as errors anyway.
        var poolLogger = logger
        poolLogger.logLevel = .error
        let client = PostgresClient(
            configuration: location.clientConfiguration(maximumConnections: maximumConnections),
            backgroundLogger: poolLogger)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            return try await body(client)
        }
    }

}

extension ServedPostgresTables {
    func table(_ name: String) throws(SyncStoreError) -> PostgresTableSQL {
        guard let table = tables[name] else { throw .unknownType(name) }
        return table
    }
}

/// What `seedsync._state` holds besides the revisions, read once when a store opens, and the
/// schema versions (read after `_schemas` is made sure of).
struct StoredState {
    var tableSchema: String
    /// The versions with the catalog's columns, read once the bookkeeping is there.
    var served: ServedPostgresTables

    static func read(on connection: PostgresConnection, location: PostgresLocation, logger: Logger) async throws
        -> StoredState
    {
        do {
            let rows = try await connection.rows(
                "SELECT format, schema, table_schema FROM seedsync._state WHERE id = 1", logger: logger
            )
            for (format, json, tableSchema) in try rows.decode((Int, String, String).self) {
                guard format == CaptureSQL.format else {
                    throw PostgresStoreError(
                        .unsupportedFormat,
                        "\(location) holds a SeedSync store of format \(format); this seed-server reads format \(CaptureSQL.format)"
                    )
                }
                // The state's schema, until the versions are read (they need `_schemas`, made next).
                let schema = try JSONDecoder().decode(DatasetSchema.self, from: Data(json.utf8))
                return StoredState(
                    tableSchema: tableSchema,
                    served: ServedPostgresTables(ServedVersions(SchemaHistory(schema)), tableSchema: tableSchema))
            }
        } catch let error as PSQLError {
            if error.sqlState == "42P01" || error.sqlState == "3F000" {
                throw PostgresStoreError(.notInitialized, "\(location) holds no SeedSync store")
            }
            throw PostgresStoreError.connection(error, location: location)
        }
        throw PostgresStoreError(.notInitialized, "\(location) holds no SeedSync store state")
    }
}

extension PostgresStoreError {
    /// A failure to reach or log into PostgreSQL, or another refusal, as one actionable line.
    static func connection(_ error: PSQLError, location: PostgresLocation) -> Self {
        if error.isConnectionFailure {
            let reason = error.underlying.map(connectionFailureReason) ?? "the connection failed"
            return Self(
                .unreachable,
                "cannot connect to PostgreSQL at \(location): \(reason); check that it runs and listens there")
        }
        switch error.sqlState {
        case "28P01", "28000":
            return Self(
                .unreachable,
                "PostgreSQL at \(location) refused the login: \(error.serverMessage ?? "authentication failed"); check the user and the password"
            )
        case "3D000":
            return Self(
                .unreachable,
                "PostgreSQL at \(location) has no database \(location.database); create it first (createdb)")
        default:
            return Self(
                .database,
                "PostgreSQL at \(location) refused a statement: \(error.serverMessage ?? "unknown error") (SQLSTATE \(error.sqlState ?? "?"))"
            )
        }
    }
}

/// `connection refused`, `connection timed out`: the system's words for a failed connect.
private func connectionFailureReason(_ error: any Error) -> String {
    if let failure = error as? NIOConnectionError {
        if let ioError = failure.connectionErrors.lazy.compactMap({ $0.error as? IOError }).first {
            return String(cString: strerror(ioError.errnoCode)).lowercased()
        }
        if failure.dnsAAAAError != nil || failure.dnsAError != nil { return "the host name does not resolve" }
    }
    if error is ChannelError { return "the connection timed out" }
    return "\(error)"
}
