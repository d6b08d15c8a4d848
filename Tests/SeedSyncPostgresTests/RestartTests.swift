import Foundation
import SeedSyncClient
import SeedSyncModel
import SeedSyncPostgres
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
