import Foundation
import SeedSyncBuild
import SeedSyncClient
import SeedSyncDemo
import SeedSyncImport
import SeedSyncModel
import SeedSyncPostgres
import SeedSyncSeed
import SeedSyncServer
import SeedSyncTesting
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// PostgreSQL stopped and started again under a running server: requests fail fast with 503
/// `store_unavailable` and `Retry-After`, and the server recovers by itself, held live sync
/// requests included.
@Suite(.needsPostgres, .tags(.postgres)) struct RestartTests {
    @Test func aRestartedDatabaseIs503ThenServedAgainWithoutRestartingTheServer() async throws {
        try await PrivatePostgres.with { postgres in
            try await PostgresSyncStore.create(at: postgres.location, schema: Fixtures.catalogSchema)
            try await PostgresSyncStore.withStore(at: postgres.location) { store in
                try await store.commit(Fixtures.catalogCreation())
                try await withLiveServer(store) { url in
                    #expect(try await Self.get(url.appendingPathComponent("v1/schema")).status == 200)
                    try await postgres.stop()
                    let started = ContinuousClock.now
                    let down = try await Self.get(url.appendingPathComponent("v1/schema"))
                    #expect(down.status == 503)
                    #expect(down.retryAfter == "2")
                    #expect(down.body.contains("store_unavailable"))
                    #expect(
                        ContinuousClock.now - started < .seconds(15),
                        "answered within the lease timeout, not after the pool gives up")
                    try await postgres.start()
                    var status = 0
                    for _ in 0..<60 where status != 200 {
                        status = try await Self.get(url.appendingPathComponent("v1/schema")).status
                        if status != 200 { try await Task.sleep(for: .milliseconds(500)) }
                    }
                    #expect(status == 200)
                    let sync = try await SyncClient(
                        configuration: .init(serverURL: url, token: liveServerToken, retry: .none)
                    ).sync(from: 0, limit: 10)
                    #expect(sync.maxRevision == 1)
                    try await Self.heldRequestIsWoken(url, byACommitAt: postgres.location)
                }
            }
        }
    }

    /// A request held after the restart is answered by the next commit of another writer (a store
    /// of its own, so only PostgreSQL can tell the server: its notification, or the server's
    /// fallback read every 5 s, whichever comes first).
    static func heldRequestIsWoken(_ url: URL, byACommitAt location: PostgresLocation) async throws {
        let client = SyncClient(
            configuration: .init(serverURL: url, token: liveServerToken, requestTimeout: 60, retry: .none))
        async let held = client.sync(from: 1, limit: 10, wait: 30)
        var waiting = 0
        for _ in 0..<600 where waiting == 0 {
            waiting = try await heldRequests(on: url)
            if waiting == 0 { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(waiting == 1, "the server held the request")
        let committed = ContinuousClock.now
        try await TestPostgres.withStore(at: location) { other in
            _ = try await other.commit(Fixtures.catalogCreation(author: "tolkien", book: 2))
        }
        let answer = try await held
        #expect(answer.maxRevision == 2)
        #expect(answer.changeSets.map(\.revision) == [2])
        #expect(ContinuousClock.now - committed < .seconds(20), "woken by the commit, not at the end of the wait")
    }

    /// One GET with the live server's token: status, `Retry-After` and body.
    static func get(_ url: URL) async throws -> (status: Int, retryAfter: String?, body: String) {
        var request = URLRequest(url: url, timeoutInterval: 30)
        request.setValue("Bearer \(liveServerToken)", forHTTPHeaderField: "Authorization")
        let (data, response) = try await TestHTTP.data(for: request)
        let http = response
        return (http.statusCode, http.value(forHTTPHeaderField: "Retry-After"), String(decoding: data, as: UTF8.self))
    }
}

/// A PostgreSQL restored from a base backup taken before the app's revisions, which then commits
/// other changes under the same revision numbers: the app is told at its next sync
/// (`history_rewritten`) and rebuilds from a snapshot, equal to the restored server.
@Suite(.needsPostgres, .tags(.postgres)) struct RestoredDatabaseTests {
    @Test(arguments: [25, 3])
    func anAppAheadOfARestoredDatabaseRebuildsItself(commitsAfterRestore: Int) async throws {
        try await PrivatePostgres.with { postgres in
            try await PostgresSyncStore.create(at: postgres.location, schema: DemoDataset.schema)
            try await withTemporaryDirectory { directory in
                let app = directory.appendingPathComponent("app/events.sqlite").path
                let seed = directory.appendingPathComponent("seed.sqlite").path
                let backupRevision: Int64
                let appRevision: Int64
                // The first server: a seed, a base backup, 15 more commits the app syncs.
                (backupRevision, appRevision) = try await PostgresSyncStore.withStore(at: postgres.location) { store in
                    _ = try await DemoDataset(events: 200, locations: 10, seed: 3).load(into: store)
                    _ = try await ChangeGenerator.mutate(store, changes: 10, seed: 5)
                    let backup = try await store.revisions().revision
                    _ = try await store.historyChains(from: backup, through: backup)
                    try await postgres.backUp(as: "backup")
                    _ = try await ChangeGenerator.mutate(store, changes: 15, seed: 6)
                    try await withLiveServer(store) { url in
                        _ = try await SeedBuilder(client: Self.client(url), options: .init(output: seed)).build()
                        _ = try await Self.importer(url, seed: seed, app: app).run()
                    }
                    return (backup, try await store.revisions().revision)
                }
                #expect(try SeedFile(path: app).metadata().revision == appRevision)

                try await postgres.restore("backup")
                try await PostgresSyncStore.withStore(at: postgres.location) { store in
                    #expect(try await store.revisions().revision == backupRevision)
                    _ = try await ChangeGenerator.mutate(store, changes: commitsAfterRestore, seed: 99)
                    try await withLiveServer(store) { url in
                        let report = try await Self.importer(url, seed: seed, app: app).run()
                        let serverRevision = try await store.revisions().revision
                        #expect(
                            report.replacements == [
                                Replacement(
                                    reason: .historyRewritten, source: .snapshot, fromRevision: appRevision,
                                    toRevision: serverRevision)
                            ])
                        #expect(try contents(ofSeed: app) == (try await Fixtures.contents(of: store)))
                    }
                }
            }
        }
    }

    static func client(_ url: URL) -> SyncClient {
        SyncClient(configuration: .init(serverURL: url, token: liveServerToken, requestTimeout: 10, retry: .none))
    }

    static func importer(_ url: URL, seed: String, app: String) -> SeedImporter {
        SeedImporter(
            configuration: .init(
                seed: seed, database: app,
                server: .init(serverURL: url, token: liveServerToken, requestTimeout: 10, retry: .none)))
    }
}
