import Foundation
import Logging
import PostgresNIO
import SeedSyncDemo
import SeedSyncModel
import SeedSyncPostgres
import SeedSyncSQLiteStore
import SeedSyncStore

/// The stores a test body runs against: one body, every backend.
///
/// ```swift
/// @Test(arguments: StoreBackend.tested)
/// func commits(backend: StoreBackend) async throws {
///     try await backend.withStore { store in … }
/// }
/// ```
public enum StoreBackend: String, CaseIterable, Sendable, CustomStringConvertible {
    case sqlite
    case postgres

    public var description: String { rawValue }

    /// Runs `body` with a new, empty store of `schema` at revision 0.
    public func withStore(
        _ schema: DatasetSchema = Fixtures.catalogSchema,
        _ body: @escaping @Sendable (any MaintainedSyncStore) async throws -> Void
    ) async throws {
        switch self {
        case .sqlite:
            try await withTemporaryDirectory { directory in
                let store = try await TestTrace.step("SQLite store \(directory.lastPathComponent): opening") {
                    try await Fixtures.emptyStore(schema, in: directory)
                }
                try await TestTrace.step("SQLite store \(directory.lastPathComponent): test body") {
                    try await body(store)
                }
            }
        case .postgres:
            try await TestPostgres.withDatabase { location in
                try await PostgresSyncStore.create(at: location, schema: schema)
                try await TestPostgres.withStore(at: location) { store in try await body(store) }
            }
        }
    }

    /// Upgrades `store` to `schema`: on PostgreSQL after running `alterations` (the team's own
    /// `ALTER TABLE`s, which the embedded store makes itself), from the tables when `fromTables`.
    @discardableResult
    public func upgrade(
        _ store: any MaintainedSyncStore, to schema: DatasetSchema, renaming renames: [FieldRename] = [],
        alterations: String, fromTables newTables: [String]? = nil
    ) async throws -> SchemaUpgrade {
        guard let postgres = store as? PostgresSyncStore else {
            return try await store.upgrade(to: schema, renaming: renames)
        }
        try await TestPostgres.runScript(alterations, on: postgres.location)
        if let newTables {
            return try await postgres.upgradeFromTables(adding: newTables, renaming: renames)
        }
        return try await postgres.upgrade(to: schema, renaming: renames)
    }

    /// Runs `body` with a new demo store at revision 1.
    public func withDemoStore(
        events: Int = 300,
        locations: Int = 20,
        seed: UInt64 = 1,
        _ body: @escaping @Sendable (any MaintainedSyncStore) async throws -> Void
    ) async throws {
        try await withStore(DemoDataset.schema) { store in
            let dataset = DemoDataset(events: events, locations: locations, seed: seed)
            try await dataset.load(into: store)
            try await body(store)
        }
    }
}

/// Runs `body` with a second store on the database of `store`: another server process, or the
/// same one restarted.
public func withSecondStore(
    of store: any MaintainedSyncStore, _ body: @escaping @Sendable (any MaintainedSyncStore) async throws -> Void
) async throws {
    if let postgres = store as? PostgresSyncStore {
        try await TestPostgres.withStore(at: postgres.location) { try await body($0) }
    } else {
        let second = try SQLiteSyncStore(path: (store as! SQLiteSyncStore).path)
        defer { try? second.close() }
        try await TestTrace.step("second SQLite store on \(second.path): test body") { try await body(second) }
    }
}

/// The PostgreSQL server the tests use: `SEEDSYNC_POSTGRES_URL` (a superuser, password in
/// `PGPASSWORD`), which `scripts/test.sh` starts. Each test gets a database of its own.
public enum TestPostgres {
    /// The server's base database; fails the test, saying how to get one, when none is set.
    public static func location(database: String? = nil) throws -> PostgresLocation {
        let environment = ProcessInfo.processInfo.environment
        guard let url = environment["SEEDSYNC_POSTGRES_URL"] else {
            throw TestSetupError(
                "the PostgreSQL tests need a server: SEEDSYNC_POSTGRES_URL (postgres://USER@127.0.0.1:PORT/DB) and PGPASSWORD; scripts/test.sh starts a throwaway one"
            )
        }
        var location = try PostgresLocation(url: url, password: environment["PGPASSWORD"])
        if let database { location.database = database }
        return location
    }

    /// Runs `body` with a new, empty database, dropped afterwards (also when `body` throws).
    public static func withDatabase(_ body: @escaping @Sendable (PostgresLocation) async throws -> Void) async throws {
        let base = try location()
        let name = "seedsync_test_\(UUID().uuidString.prefix(12).lowercased().replacingOccurrences(of: "-", with: ""))"
        try await TestTrace.step("CREATE DATABASE \(name)") { try await run("CREATE DATABASE \(name)", on: base) }
        do {
            try await body(try location(database: name))
        } catch {
            try? await TestTrace.step("DROP DATABASE \(name)") {
                try await run("DROP DATABASE \(name) WITH (FORCE)", on: base)
            }
            throw error
        }
        try await TestTrace.step("DROP DATABASE \(name)") {
            try await run("DROP DATABASE \(name) WITH (FORCE)", on: base)
        }
    }

    /// Opens the store at `location` for a test: as `PostgresSyncStore.withStore(at:)`, but a
    /// request waits up to 30 s for a pooled connection, not 5 s. Requests in tests are not timed:
    /// a connection may take seconds to come when the whole suite shares two cores. Tests of the
    /// lease timeout itself call `PostgresSyncStore.withStore(at:)`.
    public static func withStore<T: Sendable>(
        at location: PostgresLocation, _ body: @Sendable (PostgresSyncStore) async throws -> T
    ) async throws -> T {
        // Opening, the body and closing (the pool's shutdown) each named for a hung run's report.
        try await TestTrace.step("PostgreSQL store \(location.database): opening, body or closing") {
            try await PostgresSyncStore.withStore(at: location, leaseTimeout: .seconds(30)) { store in
                try await TestTrace.step("PostgreSQL store \(location.database): test body") { try await body(store) }
            }
        }
    }

    /// Runs `sql` (no parameters) on a connection of its own.
    public static func run(_ sql: String, on location: PostgresLocation) async throws {
        try await withConnection(to: location) { connection, logger in
            _ = try await connection.query(PostgresQuery(unsafeSQL: sql), logger: logger)
        }
    }

    /// Runs statements separated by `;`, each on its own (autocommit), as psql runs a script.
    public static func runScript(_ script: String, on location: PostgresLocation) async throws {
        try await withConnection(to: location) { connection, logger in
            try await connection.execute(script, logger: logger)
        }
    }

    /// Runs `body` with one connection to `location`, as a writer other than `seed-server` (psql,
    /// the team's application) would hold.
    public static func withConnection<T: Sendable>(
        to location: PostgresLocation,
        _ body: (PostgresConnection, Logger) async throws -> T
    ) async throws -> T {
        let logger = Logger(label: "seedsync-tests.postgres")
        let configuration = PostgresConnection.Configuration(
            host: location.host, port: location.port, username: location.username,
            password: ProcessInfo.processInfo.environment["PGPASSWORD"], database: location.database, tls: .disable
        )
        let connection = try await TestTrace.step("connecting to \(location.database)") {
            try await PostgresConnection.connect(configuration: configuration, id: 1, logger: logger)
        }
        do {
            let result = try await body(connection, logger)
            try? await connection.close()  // a test may have had the server end it
            return result
        } catch {
            try? await connection.close()
            throw error
        }
    }
}

/// A test that cannot run as set up, with what to do about it.
public struct TestSetupError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

extension PostgresConnection {
    /// Runs statements separated by `;` one by one on this connection, as psql sends a script.
    public func execute(_ script: String, logger: Logger) async throws {
        for statement in script.split(separator: ";").map({ $0.trimmingCharacters(in: .whitespacesAndNewlines) })
        where !statement.isEmpty {
            try await query(PostgresQuery(unsafeSQL: statement), logger: logger)
        }
    }
}
