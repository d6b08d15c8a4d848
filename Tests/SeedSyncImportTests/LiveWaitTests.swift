import Foundation
import SeedSyncImport
import SeedSyncTesting
import Testing

/// How a caught-up ``SyncEngine`` waits (`LiveWait`): by live reads (`GET /v1/changes` with
/// `live`) on a server that holds them, each commit followed by a catch-up alone; by
/// `POST /v1/sync` with `"wait"` behind a cache or server that says no live cursor.
@Suite(.timeLimit(.minutes(3))) struct LiveWaitTests {
    @Test func theEngineWaitsByLiveReadsAndFollowsEachCommitWithACatchUpAlone() async throws {
        try await withImportFixture { fixture in
            let url = fixture.served.url
            let engine = try await SyncEngineTests.waitingEngine(fixture.importer().configuration)
            try await SyncEngineTests.eventually("a held live read") { try await heldRequests(on: url) == 1 }
            let (posts, runs) = (
                try await answeredRequests("/v1/sync", on: url), try await answeredRequests("/v1/schema", on: url)
            )
            for seed in 71...73 {
                let reads = try await answeredRequests("/v1/changes", on: url)
                try await fixture.mutate(1, seed: UInt64(seed))
                let target = try await fixture.served.store.revisions().revision
                try await SyncEngineTests.eventually("revision \(target)") {
                    try revision(of: fixture.database) == target
                }
                // The held read answered, then the catch-up's read.
                #expect(try await answeredRequests("/v1/changes", on: url) >= reads + 2)
                try await SyncEngineTests.eventually("a held live read") { try await heldRequests(on: url) == 1 }
            }
            #expect(try await answeredRequests("/v1/sync", on: url) == posts, "a wait by POST /v1/sync")
            #expect(try await answeredRequests("/v1/schema", on: url) == runs, "a whole run after a commit")
            #expect(try await fixture.serverContents() == contents(ofSeed: fixture.database))
            await engine.stop()
        }
    }

    /// A cache in front that passes no `SeedSync-Live-Cursor` (the proxy passes a few headers
    /// only; a server older than live reads says none either): the engine waits with
    /// `POST /v1/sync`, held at the origin, and a commit still reaches the database.
    @Test func behindACacheThatDropsTheLiveCursorTheEngineWaitsWithSync() async throws {
        try await withImportFixture(liveReadWait: .seconds(1)) { fixture in
            let origin = fixture.served.url
            try await withAlteringProxy(to: origin, alter: { $0 }) { proxy in
                var configuration = fixture.importer().configuration
                configuration.server.serverURL = proxy
                let engine = SyncEngine(configuration: configuration, options: .init(wait: 5))
                await engine.start()
                try await SyncEngineTests.eventually("a held POST /v1/sync") {
                    let held = try await heldRequests(on: origin)
                    let reads = try await answeredRequests("/v1/changes", on: origin)
                    return held == 1 && reads > 0
                }
                // The live read is held 1 s at most; then the engine asks by POST, held 5 s.
                try await Task.sleep(for: .milliseconds(1_500))
                let reads = try await answeredRequests("/v1/changes", on: origin)
                try await Task.sleep(for: .seconds(3))
                #expect(
                    try await answeredRequests("/v1/changes", on: origin) == reads,
                    "live reads go on after an answer without a cursor")
                let posts = try await answeredRequests("/v1/sync", on: origin)
                try await fixture.mutate(1, seed: 81)
                let target = try await fixture.served.store.revisions().revision
                try await SyncEngineTests.eventually("revision \(target)") {
                    try revision(of: fixture.database) == target
                }
                #expect(try await answeredRequests("/v1/sync", on: origin) > posts)
                await engine.stop()
            }
        }
    }
}
