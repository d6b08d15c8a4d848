import Foundation
package import GRDB
public import SeedSyncModel
import SeedSyncSQL
public import SeedSyncStore

/// The embedded store: one SQLite file holding one table per type, the change log and the state.
///
/// Files are opened as a `DatabasePool` in WAL mode: readers (snapshot pages, change feeds) run
/// concurrently with the single writer and each sees one committed state. Writes are serialized
/// by the pool's writer, so revisions are assigned in commit order (rule 1 of `SyncStore`).
/// Commits are synced to disk (`synchronous = FULL` on the writer): an acknowledged revision
/// survives a crash and a power loss. GRDB sets `synchronous = NORMAL` on the writer when it
/// turns WAL on, after `prepareDatabase` ran, so the store sets FULL once its pool is open.
///
/// ```swift
/// try await SQLiteSyncStore.create(at: "server.sqlite", schema: DemoDataset.schema)
/// let store = try SQLiteSyncStore(path: "server.sqlite")
/// let revision = try await store.commit(changeSet)
/// ```
///
/// Internal tables start with `_seedsync_`, which no type name can (see `SchemaNames`):
/// `_seedsync_state` (one row: format, the newest schema's JSON, revision, min_revision),
/// `_seedsync_changes` (revision, change_set JSON, in the schema version it was written in),
/// `_seedsync_schemas` (every schema version: number, the revision it was made at, schema JSON,
/// renames JSON), `_seedsync_pushes` (the first result of every pushed change set id) and
/// `_seedsync_seeds` (the registered seeds); the last three are created when a file without them is
/// opened.
///
/// The tables have the newest version's shape. Every read checks the newest version number and
/// reloads the history when another process upgraded the file (`seed-server schema upgrade`
/// beside a running `serve`), so no answer mixes two versions: snapshot pages in the same
/// transaction as their rows; the change feed against its state, whose revisions are logged with
/// their version and projected through a history at least as new as the state.
public final class SQLiteSyncStore: SyncStore {
    package let pool: DatabasePool
    let served: LockedValue<ServedTables>
    /// Told of each revision this process commits (see ``watchRevisions(_:)``).
    let watches = RevisionWatches()
    /// The change feed's shared state and log reads, and the change sets already read (64 MiB at
    /// most), served again without reading the log.
    let feedReads = ChangeFeedReads()
    /// The history chain values this process has read (see `HistoryLedger`).
    package let chainCache = HistoryChainCache()

    /// The file the store serves.
    public var path: String { pool.path }

    /// The newest schema version's schema: the shape of the tables.
    public var schema: DatasetSchema { served.get().versions.schema }

    /// Opens an existing server database.
    ///
    /// - Throws: ``StoreError`` when nothing is at `path` or the file is not a seed-server database.
    public init(path: String) throws {
        guard FileManager.default.fileExists(atPath: path) else { throw StoreError.missingDatabase(path) }
        let versions: ServedVersions
        do {
            pool = try Self.openPool(path)
            _ = try pool.read { db in try LogState.schema(db) }
            versions = try pool.write { db in
                try db.execute(sql: PushWriter.createRecords)
                try db.execute(sql: Self.createChainTable)
                try SeedRecords.prepare(db)
                let versions = try SchemaRecords.prepare(db, path: path)
                try ScopeIndex.prepare(for: versions.schema, in: db)
                try ScopeIndex.prepareRows(of: versions.schema, in: db)
                return versions
            }
        } catch let error as DatabaseError where error.resultCode == .SQLITE_ERROR || error.resultCode == .SQLITE_NOTADB
        {
            throw StoreError.notAServerDatabase(path)
        }
        served = LockedValue(ServedTables(versions))
    }

    /// The versions and tables as of `state`, read in the same transaction: the ones in memory,
    /// or the file's history when another process upgraded it since. Memory only moves to a newer
    /// history: a snapshot read whose transaction began before an upgrade gets its own, older
    /// history and leaves the newer one in place for the requests after it (whose change sets are
    /// projected and cached with it).
    func served(_ db: Database, _ state: LogState) throws -> ServedTables {
        let current = served.get()
        guard state.schemaVersion != current.versions.storedNewest else { return current }
        let fresh = ServedTables(try SchemaRecords.versions(db, path: path))
        served.set(fresh) { $0.versions.storedNewest > $1.versions.storedNewest }
        return fresh
    }

    /// ``served(_:_:)`` with the state read first.
    package func served(_ db: Database) throws -> ServedTables {
        try served(db, LogState.fetch(db))
    }

    /// Creates a server database at `path` for `schema`, filled by `populate` as revision 1 when given.
    ///
    /// The file is built beside `path` under a temporary name and renamed into place when complete,
    /// so a failed or interrupted `init` never leaves a half-filled database at `path`.
    ///
    /// - Throws: ``StoreError`` `alreadyExists` when `path` exists, `SchemaError` for an invalid
    ///   schema, and whatever `populate` throws.
    public static func create(
        at path: String,
        schema: DatasetSchema,
        populate: (@Sendable (SQLiteSyncStore) async throws -> Void)? = nil
    ) async throws {
        try schema.validate()
        guard !FileManager.default.fileExists(atPath: path) else { throw StoreError.alreadyExists(path) }
        let temporary = path + ".partial-\(UUID().uuidString.prefix(8))"
        defer { DatabaseFiles(temporary).remove() }
        let pool = try openPool(temporary)
        try await pool.write { db in
            try createTables(in: db, schema: schema)
        }
        try pool.close()
        let store = try SQLiteSyncStore(path: temporary)
        do {
            try await populate?(store)
        } catch {
            try? store.close()
            throw error
        }
        try await store.closeCheckpointed()
        guard !FileManager.default.fileExists(atPath: path) else { throw StoreError.alreadyExists(path) }
        try FileManager.default.moveItem(atPath: temporary, toPath: path)
    }

    /// A write transaction of the pool, where what passes is `storeUnavailable` (503 with
    /// `Retry-After`: clients retry) naming the file, instead of SQLite's bare message: a volume
    /// that is full or failing, or the write lock held by another process for longer than the busy
    /// timeout (``busyTimeout``; `seed-server schema upgrade` or `load` beside a running server).
    /// The transaction is rolled back whole; once there is room, or the lock is free, the same
    /// write succeeds.
    func writeTransaction<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await mappingUnavailable { try await pool.write(body) }
    }

    /// ``writeTransaction(_:)`` outside a transaction, alone in the pool (no reader of this
    /// process runs meanwhile): for schema changes, which open their own.
    func barrierWriteWithoutTransaction<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T)
        async throws -> T
    {
        try await mappingUnavailable { try await pool.barrierWriteWithoutTransaction(body) }
    }

    private func mappingUnavailable<T>(_ write: () async throws -> T) async throws -> T {
        do {
            return try await write()
        } catch let error as DatabaseError where error.isVolumeFailure {
            throw SyncStoreError.storeUnavailable(
                "\(path) cannot be written: \(error.reason); free space on its volume or check the volume")
        } catch let error as DatabaseError where error.resultCode == .SQLITE_BUSY {
            throw SyncStoreError.storeUnavailable(
                "\(path) is locked by another process writing it (such as seed-server schema upgrade or load) for more than \(Int(Self.busyTimeout)) s"
            )
        }
    }

    /// How long a write waits for another process's write lock before it fails as unavailable.
    static let busyTimeout: TimeInterval = 10

    /// Closes the file; later calls fail.
    public func close() throws {
        try pool.close()
    }

    /// Moves every committed page from the WAL into the main file, then closes.
    ///
    /// Needed before the main file is renamed: the pool's last connection to close may be a
    /// read-only reader, which leaves the WAL in place.
    func closeCheckpointed() async throws {
        let complete = try await pool.barrierWriteWithoutTransaction { db in try db.checkpointCompletely() }
        guard complete else { throw StoreError.incompleteCheckpoint }
        try pool.close()
    }

    /// A pool on `path` whose writer syncs every commit to disk (`synchronous = FULL`).
    ///
    /// Set after the pool is open: GRDB's WAL setup gives the writer `synchronous = NORMAL` after
    /// `prepareDatabase` runs, which would let a power loss take back acknowledged revisions.
    static func openPool(_ path: String) throws -> DatabasePool {
        var configuration = Configuration()
        configuration.busyMode = .timeout(busyTimeout)
        let pool = try DatabasePool(path: path, configuration: configuration)
        try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
        return pool
    }

    private static func createTables(in db: Database, schema: DatasetSchema) throws {
        try db.execute(
            sql: """
                CREATE TABLE _seedsync_state (
                  id INTEGER PRIMARY KEY CHECK (id = 1),
                  format INTEGER NOT NULL,
                  schema TEXT NOT NULL,
                  revision INTEGER NOT NULL,
                  min_revision INTEGER NOT NULL
                );
                CREATE TABLE _seedsync_changes (
                  revision INTEGER PRIMARY KEY,
                  change_set BLOB NOT NULL
                );
                """)
        let schemaJSON = String(decoding: try JSONEncoder.stable().encode(schema), as: UTF8.self)
        try db.execute(
            sql: "INSERT INTO _seedsync_state (id, format, schema, revision, min_revision) VALUES (1, 1, ?, 0, 0)",
            arguments: [schemaJSON]
        )
        for type in schema.types {
            for statement in TableSQL(type: type).create { try db.execute(sql: statement) }
        }
    }

}

/// The schema versions a store serves and the SQL of the newest version's tables.
package struct ServedTables: Sendable {
    package let versions: ServedVersions
    let tables: [String: TableSQL]

    init(_ versions: ServedVersions) {
        self.versions = versions
        tables = Dictionary(uniqueKeysWithValues: versions.schema.types.map { ($0.name, TableSQL(type: $0)) })
    }

    var schema: DatasetSchema { versions.schema }

    func table(_ name: String) throws(SyncStoreError) -> TableSQL {
        guard let table = tables[name] else { throw .unknownType(name) }
        return table
    }
}

/// The revisions in the one row of `_seedsync_state`, and the newest schema version, read by every request.
extension LogState {
    static func fetch(_ db: Database) throws -> LogState {
        guard
            let row = try Row.fetchOne(
                db.cachedStatement(
                    sql:
                        "SELECT revision, min_revision, (SELECT max(version) FROM _seedsync_schemas) FROM _seedsync_state WHERE id = 1"
                ))
        else { throw DatabaseError(resultCode: .SQLITE_ERROR, message: "no state row") }
        return LogState(revision: row[0], minRevision: row[1], schemaVersion: row[2])
    }

    static func save(_ db: Database, revision: Int64, minRevision: Int64) throws {
        try db.execute(
            sql: "UPDATE _seedsync_state SET revision = ?, min_revision = ? WHERE id = 1",
            arguments: [revision, minRevision]
        )
    }

    /// The newest schema, as the state row keeps it.
    static func schema(_ db: Database) throws -> DatasetSchema {
        guard let json = try String.fetchOne(db, sql: "SELECT schema FROM _seedsync_state WHERE id = 1") else {
            throw DatabaseError(resultCode: .SQLITE_ERROR, message: "no state row")
        }
        return try JSONDecoder().decode(DatasetSchema.self, from: Data(json.utf8))
    }
}

/// A problem with a server database file as a whole: where it is, what it holds, a bulk load
/// that does not fit. Requests the store cannot serve throw `SyncStoreError` instead.
///
/// Decide by ``code``; the description names the file and what went wrong.
public struct StoreError: Error, CustomStringConvertible, Sendable {
    /// What went wrong. New codes may be added: a `switch` over it needs a `default`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case missingDatabase, notAServerDatabase, alreadyExists, incompleteCheckpoint, invalidLoad
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// Nothing is at the database path.
        public static let missingDatabase = Code(.missingDatabase)
        /// The file at the path is not a server database (another SQLite file, or not SQLite).
        public static let notAServerDatabase = Code(.notAServerDatabase)
        /// Something is already at the path of a database to create.
        public static let alreadyExists = Code(.alreadyExists)
        /// A new database could not be checkpointed completely; nothing was created.
        public static let incompleteCheckpoint = Code(.incompleteCheckpoint)
        /// A bulk load left a reference to a missing row; nothing was loaded.
        public static let invalidLoad = Code(.invalidLoad)

        public var description: String { base.rawValue }
    }

    public let code: Code
    public let description: String

    init(_ code: Code, _ description: String) {
        self.code = code
        self.description = description
    }

    static func missingDatabase(_ path: String) -> Self {
        Self(.missingDatabase, "no server database at \(path)")
    }

    static func notAServerDatabase(_ path: String) -> Self {
        Self(.notAServerDatabase, "\(path) is not a seed-server database")
    }

    static func alreadyExists(_ path: String) -> Self {
        Self(.alreadyExists, "\(path) already exists; remove it or choose another path")
    }

    static let incompleteCheckpoint = Self(
        .incompleteCheckpoint, "the new database could not be checkpointed completely; nothing was created"
    )

    static func invalidLoad(_ message: String) -> Self {
        Self(.invalidLoad, message)
    }
}
