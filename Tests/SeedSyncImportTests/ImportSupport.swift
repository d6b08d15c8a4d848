import Crypto
import Foundation
import GRDB
import SeedSyncClient
import SeedSyncDemo
import SeedSyncImport
import SeedSyncModel
import SeedSyncSeed
import SeedSyncServer
import SeedSyncTesting

/// A served demo store, a seed built from it at `seedRevision`, then more change sets on the server.
struct ImportFixture: Sendable {
    let served: ServedStore
    /// The seed, `seed.sqlite` (and `seed.sqlite.gz` when built with gzip), with its manifest.
    let seed: String
    let seedRevision: Int64

    /// The app's database, in a folder that does not exist yet.
    var database: String { served.path("app/data/events.sqlite") }

    func importer(
        seed: String? = nil,
        database: String? = nil,
        reseedIfNewer: Bool = true,
        maxRowsPerTransaction: Int = 5000,
        catchUpCacheMiB: Int = 128,
        maxRowsPerCommit: Int = 1_000_000,
        maxSecondsPerCommit: Double = 2,
        syncLimit: Int = 50,
        lockTimeout: Double = 5,
        expectedSchemaVersion: Int? = nil,
        token: String = liveServerToken
    ) -> SeedImporter {
        SeedImporter(
            configuration: .init(
                seed: seed ?? self.seed, database: database ?? self.database,
                server: .init(serverURL: served.url, token: token, requestTimeout: 10, retry: .none),
                expectedSchemaVersion: expectedSchemaVersion, reseedIfNewer: reseedIfNewer, syncLimit: syncLimit,
                maxRowsPerTransaction: maxRowsPerTransaction, catchUpCacheMiB: catchUpCacheMiB,
                maxRowsPerCommit: maxRowsPerCommit, maxSecondsPerCommit: maxSecondsPerCommit, lockTimeout: lockTimeout
            ))
    }

    /// Changes the server: `changes` more change sets.
    func mutate(_ changes: Int, seed: UInt64) async throws {
        _ = try await ChangeGenerator.mutate(served.store, changes: changes, seed: seed)
    }

    /// Installs the seed and catches up, writes `changes` more change sets, then builds a newer seed
    /// from the server: the database's revision, and the newer seed with its revision.
    func installThenBuildNewerSeed(after changes: Int, gzip: Bool = false) async throws -> (
        installed: Int64, newer: String, newerRevision: Int64
    ) {
        try await importer().run()
        let installed = try revision(of: database)
        try await mutate(changes, seed: 21)
        let newer = try await buildSeed("newer.sqlite", gzip: gzip)
        return (installed, newer, try revision(of: newer))
    }

    /// Builds another seed from the server as it is now.
    func buildSeed(_ name: String, gzip: Bool = false) async throws -> String {
        try await served.builder(name, pageSize: 500, gzip: gzip).build().output
    }

    /// The server's rows, every type.
    func serverContents() async throws -> [String: [[JSONValue]]] {
        try await Fixtures.contents(of: served.store)
    }

    func serverRevision() async throws -> Int64 {
        try await served.client().schema().revision
    }
}

/// A demo store with `events` events, a seed built from it, then `changesAfter` more change sets;
/// the server holds a live sync request for `maxWait` at most.
func withImportFixture(
    events: Int = 300,
    locations: Int = 20,
    changesAfter: Int = 60,
    gzip: Bool = false,
    mutationSeed: UInt64 = 11,
    changesBlockSize: Int64 = 1_000,
    maxWait: Duration = .seconds(55),
    liveReadWait: Duration = .seconds(20),
    snapshotMaxAge: Duration = .seconds(30),
    jwt: JWTConfiguration? = nil,
    answerKey: Curve25519.Signing.PrivateKey? = nil,
    _ body: @escaping @Sendable (ImportFixture) async throws -> Void
) async throws {
    try await withServedStore(
        events: events, locations: locations, changes: 20,
        configure: {
            $0.changesBlockSize = changesBlockSize
            $0.maxWait = maxWait
            $0.liveReadWait = liveReadWait
            $0.snapshotMaxAge = snapshotMaxAge
            $0.jwt = jwt
            $0.answerKey = answerKey
        }
    ) { served in
        let report = try await served.builder("seed.sqlite", pageSize: 500, gzip: gzip).build()
        _ = try await ChangeGenerator.mutate(served.store, changes: changesAfter, seed: mutationSeed)
        try await body(ImportFixture(served: served, seed: report.output, seedRevision: report.manifest.revision))
    }
}

/// The revision stored in a seed-format database.
func revision(of database: String) throws -> Int64 {
    let file = try SeedFile(path: database)
    defer { try? file.close() }
    return try file.metadata().revision
}

/// `PRAGMA quick_check` of a database, through a connection of the test's own.
func quickCheck(_ database: String) throws -> String? {
    let queue = try DatabaseQueue(path: database)
    defer { try? queue.close() }
    return try queue.read { db in try String.fetchOne(db, sql: "PRAGMA quick_check") }
}

/// The number of local change sets queued in an app's database (the outbox is made by the first write).
func outboxCount(_ database: String) throws -> Int {
    let queue = try DatabaseQueue(path: database)
    defer { try? queue.close() }
    return try queue.read { db in
        try db.tableExists("_seedsync_outbox") ? Int.fetchOne(db, sql: "SELECT count(*) FROM _seedsync_outbox") ?? 0 : 0
    }
}

/// The revision stored in a seed-format database, read with a connection of the test's own.
func storedRevision(_ db: Database) throws -> Int64? {
    try String.fetchOne(db, sql: "SELECT value FROM _seedsync_seed WHERE key = 'revision'").flatMap { Int64($0) }
}

/// Copies the database at `source` to `destination` as a process killed in the middle of a write
/// leaves it: `statement` half written into the file (the page cache is one page, so it spills),
/// and a hot `-journal` beside it that holds the pages as they were.
func copyWithHotJournal(_ source: String, to destination: String, changing statement: String) throws {
    let scratch = source + ".scratch"
    try FileManager.default.createDirectory(
        atPath: (destination as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
    try FileManager.default.copyItem(atPath: source, toPath: scratch)
    let queue = try DatabaseQueue(path: scratch)
    try queue.inDatabase { db in
        try db.execute(sql: "PRAGMA journal_mode = DELETE; PRAGMA cache_size = 1; BEGIN IMMEDIATE; \(statement)")
        try FileManager.default.copyItem(atPath: scratch, toPath: destination)
        try FileManager.default.copyItem(atPath: scratch + "-journal", toPath: destination + "-journal")
        try db.execute(sql: "ROLLBACK")
    }
    try queue.close()
    try FileManager.default.removeItem(atPath: scratch)
}

/// The files in `folder`, sorted.
func files(in folder: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted()
}

/// A value shared between tasks, behind a lock.
final class Locked<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value

    init(_ value: Value) {
        stored = value
    }

    var value: Value { lock.withLock { stored } }

    func update(_ change: (inout Value) -> Void) {
        lock.withLock { change(&stored) }
    }
}
