import Foundation
import GRDB
import SeedSyncModel
import SeedSyncSQL
import SeedSyncSeed

/// The app's database: an installed seed in WAL mode, moved forward by change sets.
///
/// The importer writes through one connection, which is either its own (``open(at:)``: given only
/// a path) or the app's GRDB `DatabasePool` or `DatabaseQueue` (``adopt(_:)``), so that the app's
/// `ValueObservation` and `DatabaseRegionObservation` see every synced change as their own. The
/// two differ only where the file itself changes hands:
/// - the importer's own connection is a `DatabaseQueue` in WAL mode, never a pool: GRDB's pool
///   writes a throwaway table into a file it opens without a `-wal`, so a run with nothing to
///   apply would still change the file. A new database is installed by renaming the checked seed
///   into place;
/// - the app's connection is never closed by the importer, and the file it has open is never
///   renamed over: the seed is installed and replaced by copying its pages into it (SQLite's backup
///   API, one transaction that the app's readers see whole), after which the app's observers are
///   told that every table changed. An app that opened its pool on a path with no database yet hands
///   over an empty database, which the seed is installed into.
///
/// Foreign keys are enforced (the seed tables declare them deferred, so a batch of change sets is
/// checked when it commits; an app's connection with them off is refused) and the importer's own
/// connection uses `synchronous = NORMAL`: a power loss may take back the last transactions, but
/// never part of one, and the stored revision goes back with them, so the next sync applies them again.
final class LocalDatabase: Sendable {
    let path: String
    /// The metadata when the database was opened; the revision moves on (see ``revision()``).
    let metadata: SeedMetadata
    /// The connection every write goes through.
    let writer: any DatabaseWriter
    /// Whether the app handed the connection over (``adopt(_:)``): the importer never closes it.
    let isAppDatabase: Bool

    init(path: String, metadata: SeedMetadata, writer: any DatabaseWriter, isAppDatabase: Bool) {
        self.path = path
        self.metadata = metadata
        self.writer = writer
        self.isAppDatabase = isAppDatabase
    }

    /// The importer connection's page cache: 32 MiB, so updates scattered over a large database
    /// do not read the same pages from the file again and again (SQLite's default is 2 MiB).
    private static let cacheKiB = 32 << 10
    /// The WAL's size past which a catch-up checkpoints it, between two transactions
    /// (``checkpointIfLarge()``): 64 MiB. SQLite's own rule (1,000 pages, 4 MiB) checkpoints inside
    /// the commit of whichever transaction filled the WAL, and an edit session waiting for that
    /// transaction would wait for the copy and its sync too (up to 100 ms at 1M rows). So the
    /// importer's transactions commit without it (`wal_autocheckpoint = 0` on its own connection,
    /// and for the length of each of its transactions on the app's), and the catch-up checkpoints
    /// where nothing waits for it. The importer's own connection also truncates the WAL back to
    /// this size when it starts over (`journal_size_limit`), so its size says what it holds; the
    /// app's WAL keeps the size it reached, and once past the limit a catch-up checkpoints after
    /// each of its transactions (still outside their commits).
    /// Measured on a 40,000-change-set catch-up into 1M rows (`scripts/bench/bench.sh` case 8): the WAL
    /// peaks near 80 MB (a rule by rows, 20,000, let it reach 150 MB: scattered updates write a
    /// page or more each); 16 MiB kept it near 30 MB but made the catch-up 20 % slower (more
    /// syncs of the main file, fewer pages written once for several transactions).
    static let walLimit = 64 << 20

    /// Opens the database at `path` (switching it to WAL), or returns `nil` when nothing is there.
    ///
    /// The file is first checked read-only, so a file that is not a SeedSync database is never written.
    static func open(at path: String) throws -> LocalDatabase? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        try rollBackInterruptedWrite(at: path)
        let metadata: SeedMetadata
        do {
            let file = try SeedFile(path: path)
            defer { try? file.close() }
            metadata = try file.metadata()
        } catch let error as SeedError where error.isStorageFailure {
            // Never "not a SeedSync database": that advice would discard good data.
            throw ImportError(.storage, "\(error); \(path) was left as it is")
        } catch {
            throw ImportError(
                .invalidDatabase, "\(error); it was left as it is: move it away or choose another database path")
        }
        var configuration = Configuration()
        configuration.foreignKeysEnabled = true
        configuration.busyMode = .timeout(10)
        configuration.prepareDatabase { db in
            guard try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL") == "wal" else {
                throw ImportError(.invalidDatabase, "cannot switch \(path) to WAL mode")
            }
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            try db.execute(
                sql:
                    "PRAGMA cache_size = -\(cacheKiB); PRAGMA wal_autocheckpoint = 0; PRAGMA journal_size_limit = \(walLimit)"
            )
        }
        do {
            return LocalDatabase(
                path: path, metadata: metadata, writer: try DatabaseQueue(path: path, configuration: configuration),
                isAppDatabase: false)
        } catch let error as DatabaseError {
            throw ImportError(SeedError.database(error, "open \(path) for writing"), otherwise: .invalidDatabase)
        }
    }

    /// The revision the rows are at.
    func revision() async throws -> Int64 {
        try await writer.read { db in try SeedMetadata.storedRevision(db) }
    }

    /// The server's history chain stored with `revision`, when the database is at it and has one.
    func historyChain(at revision: Int64) async throws -> HistoryChain? {
        try await writer.read { db in
            try SeedMetadata.storedRevision(db) == revision ? SeedMetadata.storedChain(db) : nil
        }
    }

    /// Switches the file at `path`, which no one else has open, to WAL mode, and closes it.
    ///
    /// SQLite syncs the file as the switch commits; closing the last connection checkpoints and
    /// deletes the `-wal` and `-shm` files, so the file alone is the whole database.
    static func switchToWAL(at path: String) throws {
        let mode = try withConnection(to: path, "switch \(path) to WAL mode") { queue in
            try queue.writeWithoutTransaction { db in try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL") }
        }
        guard mode == "wal" else { throw ImportError(.invalidDatabase, "cannot switch \(path) to WAL mode") }
    }

    /// Rolls back a write that was killed in rollback-journal mode, when the file is a seed-format one.
    ///
    /// A process killed in the middle of such a write (the switch of a freshly installed seed to
    /// WAL is one) leaves a hot `-journal`. SQLite rolls it back on the next open, but only from a
    /// read-write connection: the read-only check in ``open(at:)`` would fail on it with "attempt
    /// to write a readonly database". So when a `-journal` is there and the file's header carries
    /// SeedSync's application id, one read-write connection reads the schema, which rolls the
    /// journal back. Any other file is left to the read-only check, which refuses it untouched.
    private static func rollBackInterruptedWrite(at path: String) throws {
        guard FileManager.default.fileExists(atPath: DatabaseFiles(path).journal), SeedFormat.hasSeedHeader(at: path)
        else {
            return
        }
        _ = try withConnection(to: path, "roll back the interrupted write in \(path)") { queue in
            try queue.read { db in try Int.fetchOne(db, sql: "PRAGMA schema_version") }
        }
    }

    /// Runs `body` on a plain read-write connection to `path`, then closes it (closing is part of
    /// the work: the last connection to a WAL file checkpoints it and removes its `-wal`).
    ///
    /// - Throws: ``ImportError`` on a SQLite error: ``ImportError/Code/storage`` when the volume
    ///   failed, else ``ImportError/Code/invalidDatabase``; `action` names what was being done.
    private static func withConnection<T>(to path: String, _ action: String, _ body: (DatabaseQueue) throws -> T) throws
        -> T
    {
        do {
            let queue = try DatabaseQueue(path: path)
            let result = try body(queue)
            try queue.close()
            return result
        } catch let error as DatabaseError {
            throw ImportError(SeedError.database(error, action), otherwise: .invalidDatabase)
        }
    }

    /// Runs `body` in one write transaction; `action` names it in errors.
    ///
    /// - Throws: what `body` throws; ``ImportError/Code/invalidChangeSet`` when the transaction
    ///   leaves a reference to a missing row, ``ImportError/Code/storage`` or
    ///   ``ImportError/Code/invalidDatabase`` for other SQLite errors. Nothing is written then.
    func write<T: Sendable>(_ action: String, _ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do {
            return try await transaction { [self] db in
                let result = try body(db)
                try notifyApp(ofChangesTo: nil, in: db)
                return result
            }
        } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_FOREIGNKEY {
            throw ImportError(
                .invalidChangeSet, "\(action) would leave a reference to a missing row; nothing was written to \(path)")
        } catch let error as DatabaseError {
            throw ImportError(
                SeedError.database(error, action, file: path), otherwise: .invalidDatabase, "nothing was written")
        }
    }

    /// A write transaction on ``writer``. On the app's connection SQLite's automatic checkpoint
    /// is off for its commit, and the app's setting is restored after (see ``walLimit``); a WAL hook
    /// the app set itself with `sqlite3_wal_hook` on that connection would be replaced by it.
    private func transaction<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        guard isAppDatabase else { return try await writer.write(body) }
        return try await writer.writeWithoutTransaction { db in
            let pages = try Int.fetchOne(db, sql: "PRAGMA wal_autocheckpoint") ?? 1000
            try db.execute(sql: "PRAGMA wal_autocheckpoint = 0")
            defer { try? db.execute(sql: "PRAGMA wal_autocheckpoint = \(pages)") }
            var result: T?
            try db.inTransaction(.immediate) {
                result = try body(db)
                return .commit
            }
            return result!
        }
    }

    /// Tells the app's observers (``isAppDatabase``) that the tables of `types` (every type when
    /// `nil`) changed in the transaction going on.
    ///
    /// GRDB's observation sees the statements GRDB runs; the importer writes rows through
    /// SQLite's C API (`StatementValues`, several times faster), which it does not see. So each
    /// transaction names what it wrote, by table (GRDB's precision for notified changes): an
    /// app's `ValueObservation` of a table fetches again after a transaction that wrote it, and
    /// only then.
    func notifyApp(ofChangesTo types: [String]?, in db: Database) throws {
        guard isAppDatabase else { return }
        for name in Set(types ?? metadata.schema.types.map(\.name)) {
            try db.notifyChanges(in: Table(name))
        }
    }

    /// Runs `body` in one read transaction.
    func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do {
            return try await writer.read(body)
        } catch let error as DatabaseError {
            throw ImportError(SeedError.database(error, "read \(path)", file: path), otherwise: .invalidDatabase)
        }
    }

    /// Applies `changeSets` in one transaction, with the revision they lead to, and lets
    /// `pending` bring the local edits in line with them (``PendingChanges/absorb(_:in:)``). With
    /// `stopsEarly`, when it says so after a change set, the transaction ends there: the result says how
    /// many were applied (see ``ChangeApplier/apply(_:in:stopsEarly:)``).
    ///
    /// - Throws: ``ImportError/Code/invalidChangeSet`` when one does not follow on, or the batch
    ///   leaves a reference dangling; nothing of the batch is written then.
    func apply(
        _ changeSets: [CheckedChangeSet], with applier: ChangeApplier, pending: PendingChanges,
        stopsEarly: (@Sendable () -> Bool)? = nil
    ) async throws -> ([AppliedChangeSet], [ImportEvent]) {
        do {
            return try await transaction { [self] db in
                let applied = try applier.apply(changeSets, in: db, stopsEarly: stopsEarly)
                let events = try pending.absorb(applied, in: db)
                // Repairing references may write rows of other types.
                try notifyApp(ofChangesTo: events.isEmpty ? applied.flatMap(\.types.keys) : nil, in: db)
                return (applied, events)
            }
        } catch let error as SeedError {
            throw try await syncStopped(by: error)
        } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_FOREIGNKEY {
            let range = "\(changeSets.first?.revision ?? 0)…\(changeSets.last?.revision ?? 0)"
            throw ImportError(
                .invalidChangeSet,
                "sync stopped: change sets \(range) leave a reference to a missing row; \(path) stays at revision \(try await revision())"
            )
        } catch let error as DatabaseError {
            let failure = SeedError.database(error, "write \(path)", file: path)
            throw ImportError(
                failure, otherwise: .invalidDatabase, "sync stopped, \(path) stays at its last good revision")
        }
    }

    /// The error that ends a catch-up on a change set that cannot be applied (`error` says which
    /// and why): ``ImportError/Code/invalidChangeSet``, with the revision the database stays at.
    func syncStopped(by error: SeedError) async throws -> ImportError {
        ImportError(.invalidChangeSet, "sync stopped: \(error); \(path) stays at revision \(try await revision())")
    }

    /// Replaces every page of the database with the seed at `source`, in one transaction, and
    /// returns the database reopened.
    ///
    /// This goes through SQLite's backup API rather than a rename: renaming a file over a WAL
    /// database that others have open would let its old `-wal` frames be replayed onto the new
    /// file. Readers with the database open keep working; their next transaction sees the new rows.
    func replaced(with source: String) async throws -> LocalDatabase {
        try await Self.copy(source, into: writer, "\(path) was not replaced and keeps its rows")
        return try await reopened()
    }

    /// The database opened again after its schema or its whole content changed under this value.
    func reopened() async throws -> LocalDatabase {
        if isAppDatabase {
            guard let adopted = try await Self.adopt(writer) else {
                throw ImportError(.invalidDatabase, "\(path) was emptied while the importer had it open")
            }
            return adopted
        }
        try await close()
        guard let reopened = try Self.open(at: path) else {
            throw ImportError(.invalidDatabase, "\(path) disappeared while the importer had it open")
        }
        return reopened
    }

    /// Copies what it can of the WAL into the main file, without waiting for anyone (see
    /// ``close()``), once the WAL is larger than ``walLimit``. The catch-up calls it between its
    /// transactions.
    ///
    /// On the app's database it runs on a connection of its own, opened for it: a checkpoint does
    /// not hold the write lock, and the app's single writer stays free for the app's commits (an
    /// edit session's among them) while pages are copied.
    func checkpointIfLarge() async throws {
        let size = (try? FileManager.default.attributesOfItem(atPath: DatabaseFiles(path).wal)[.size] as? NSNumber)?
            .intValue
        guard let size, size > Self.walLimit else { return }
        guard isAppDatabase else { return try await checkpoint(on: writer) }
        let checkpointer: DatabaseQueue
        do {
            checkpointer = try DatabaseQueue(path: path)
        } catch let error as DatabaseError {
            throw ImportError(SeedError.database(error, "open \(path) to checkpoint it"), otherwise: .invalidDatabase)
        }
        defer { try? checkpointer.close() }
        try await checkpoint(on: checkpointer)
    }

    /// A passive checkpoint on `connection` (another connection checkpointing the same WAL copies
    /// the frames).
    ///
    /// - Throws: ``ImportError`` when the checkpoint fails (an I/O error); every change set is committed.
    private func checkpoint(on connection: any DatabaseWriter) async throws {
        do {
            try await connection.writeWithoutTransaction { db in
                do {
                    _ = try db.checkpoint(.passive)
                } catch let error as DatabaseError where error.resultCode == .SQLITE_BUSY {
                    // Another connection is checkpointing the same WAL: it copies the frames.
                }
            }
        } catch let error as DatabaseError {
            throw ImportError(
                SeedError.database(error, "checkpoint \(path)"), otherwise: .invalidDatabase,
                "every change set is committed")
        }
    }

    /// Copies what it can of the WAL into the main file, then closes the database.
    ///
    /// The checkpoint is passive: it never waits. An app always has readers open, and a reader's
    /// transaction pins the WAL frames it may still need; a blocking checkpoint would wait on it
    /// for the whole busy timeout, only to give up. What is not copied stays in the WAL, where it
    /// is just as committed, and a later checkpoint copies it. A failure of the checkpoint itself
    /// (an I/O error) is reported.
    /// The app's connection is left open, as the app handed it over.
    func close() async throws {
        guard !isAppDatabase, let queue = writer as? DatabaseQueue else { return }
        do {
            try await checkpoint(on: queue)
        } catch {
            try? queue.close()
            throw error
        }
        do {
            try queue.close()
        } catch let error as DatabaseError {
            throw ImportError(
                SeedError.database(error, "close \(path)"), otherwise: .invalidDatabase, "every change set is committed"
            )
        }
    }
}
