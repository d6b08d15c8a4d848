import Foundation
import Hummingbird
import HummingbirdTesting
import NIOConcurrencyHelpers
import SeedSyncDemo
import SeedSyncModel
import SeedSyncSQLiteStore
import SeedSyncServer
import SeedSyncStore
import SeedSyncTesting
import Testing

/// `GET /metrics`: an admin token reads Prometheus text with the requests, the pushes and the
/// store's revisions, on every store.
@Suite struct MetricsTests {
    @Test func metricsCountRequestsPushesAndRevisions() async throws {
        let create =
            #"{"id": "ID", "types": ["locations"], "locations": {"create": [-1], "attributes": {"-1": {"name": "N", "city": "C", "latitude": 1, "longitude": 2}}}}"#
        let stale =
            #"{"id": "stale", "types": ["locations"], "locations": {"delete": [1], "attributes": {"1": {"revision": 0}}}}"#
        let invalid =
            #"{"id": "invalid", "types": ["locations"], "locations": {"create": [-1], "attributes": {"-1": {"name": 5}}}}"#
        for backend in StoreBackend.tested {
            try await backend.withDemoStore(events: 50, locations: 10) { store in
                // Pages kept an hour: the second read of a page is from memory however loaded the machine.
                let configuration = testConfiguration { $0.snapshotMaxAge = .seconds(3_600) }
                let app = try await buildApplication(store: store, configuration: configuration)
                try await app.test(.router) { client in
                    for token in [TestTokens.read, TestTokens.write] {
                        try await client.execute(uri: "/metrics", method: .get, headers: headers(token: token)) {
                            #expect($0.status == .forbidden)
                        }
                    }
                    try await client.execute(uri: "/metrics", method: .get, headers: headers(token: nil)) {
                        #expect($0.status == .unauthorized)
                    }
                    for _ in 0..<2 {
                        try await client.execute(
                            uri: "/v1/snapshot/events?limit=5&notBefore=1", method: .get, headers: headers()
                        ) {
                            #expect($0.status == .ok)
                        }
                    }
                    try await client.execute(uri: "/v1/snapshot/nope", method: .get, headers: headers()) {
                        #expect($0.status == .notFound)
                    }
                    try await client.execute(uri: "/nowhere", method: .get, headers: headers()) {
                        #expect($0.status == .notFound)
                    }
                    let push =
                        #"{"maxRevision": 1, "changeSets": [\#(create.replacingOccurrences(of: "ID", with: "a")), \#(stale), \#(invalid)]}"#
                    try await client.execute(
                        uri: "/v1/sync", method: .post, headers: headers(token: TestTokens.write), body: body(push)
                    ) {
                        #expect($0.status == .ok)
                    }
                    try await client.execute(uri: "/metrics", method: .get, headers: headers(token: TestTokens.admin)) {
                        response in
                        #expect(response.status == .ok)
                        #expect(response.headers[.contentType] == "text/plain; version=0.0.4; charset=utf-8")
                        let metrics = Self.samples(String(buffer: response.body))
                        #expect(
                            metrics[
                                #"seedsync_http_requests_total{route="/v1/snapshot/{type}",method="GET",status="200"}"#]
                                == 2, "\(metrics.keys.sorted())")
                        #expect(
                            metrics[
                                #"seedsync_http_requests_total{route="/v1/snapshot/{type}",method="GET",status="404"}"#]
                                == 1)
                        #expect(
                            metrics[#"seedsync_http_requests_total{route="NotFound",method="GET",status="404"}"#] == 1,
                            "\(metrics.keys.sorted())")
                        #expect(
                            metrics[#"seedsync_http_requests_total{route="/metrics",method="GET",status="403"}"#] == 2)
                        #expect(
                            metrics[#"seedsync_http_requests_total{route="/metrics",method="GET",status="401"}"#] == 1)
                        #expect(
                            metrics[#"seedsync_http_requests_total{route="/v1/sync",method="POST",status="200"}"#] == 1)
                        #expect(
                            metrics[
                                #"seedsync_http_request_duration_seconds_count{route="/v1/snapshot/{type}",method="GET"}"#
                            ] == 3)
                        #expect(
                            metrics[
                                #"seedsync_http_request_duration_seconds_bucket{route="/v1/snapshot/{type}",method="GET",le="+Inf"}"#
                            ] == 3)
                        // The second read of the page was answered from the page the server kept.
                        #expect(metrics[#"seedsync_snapshot_pages_total{source="read"}"#] == 1)
                        #expect(metrics[#"seedsync_snapshot_pages_total{source="kept"}"#] == 1)
                        #expect((metrics["seedsync_snapshot_kept_bytes"] ?? 0) > 100)
                        #expect(metrics[#"seedsync_pushes_total{result="applied"}"#] == 1)
                        #expect(metrics[#"seedsync_pushes_total{result="conflict"}"#] == 1)
                        #expect(metrics[#"seedsync_pushes_total{result="rejected"}"#] == 1)
                        #expect(metrics[#"seedsync_store_errors_total{code="store_unavailable"}"#] == 0)
                        #expect(metrics["seedsync_revision"] == 2)
                        #expect(metrics["seedsync_min_revision"] == 1)
                        #expect(metrics["seedsync_change_log_revisions"] == 1)
                        #expect(metrics["seedsync_store_up"] == 1)
                    }
                }
            }
        }
    }

    @Test func storeFailuresAreCountedAndShownAsStoreDown() async throws {
        let store = UnavailableStore()
        let app = try await buildApplication(store: store, configuration: testConfiguration())
        try await app.test(.router) { client in
            let up = try await Self.scrape(client)
            #expect(
                up["seedsync_store_up"] == 1 && up["seedsync_revision"] == 7 && up["seedsync_change_log_revisions"] == 6
            )
            store.isDown.withLockedValue { $0 = true }
            for _ in 0..<2 {
                try await client.execute(
                    uri: "/v1/sync", method: .post, headers: headers(), body: body(#"{"maxRevision": 1}"#)
                ) { response in
                    #expect(response.status == .serviceUnavailable)
                }
            }
            let down = try await Self.scrape(client)
            #expect(down["seedsync_store_up"] == 0, "the scrape could not read the store")
            #expect(down[#"seedsync_store_errors_total{code="store_unavailable"}"#] == 3, "two syncs and the scrape")
            #expect(down[#"seedsync_store_errors_total{code="schema_mismatch"}"#] == 0)
            #expect(down[#"seedsync_http_requests_total{route="/v1/sync",method="POST",status="503"}"#] == 2)
            #expect(down["seedsync_revision"] == 7, "the last revision read")
        }
    }

    private static func scrape(_ client: some TestClientProtocol) async throws -> [String: Double] {
        try await client.execute(uri: "/metrics", method: .get, headers: headers(token: TestTokens.admin)) { response in
            #expect(response.status == .ok)
            return samples(String(buffer: response.body))
        }
    }

    /// The samples of a Prometheus text exposition: `name{labels}` to value.
    static func samples(_ text: String) -> [String: Double] {
        var samples: [String: Double] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else {
                continue
            }
            samples[String(line[..<space])] = value
        }
        return samples
    }
}

/// A store whose database goes down when told: `store_unavailable`, as a restarting PostgreSQL
/// gives. Its schema stays readable (the application reads it once, at the start).
private final class UnavailableStore: SyncStore {
    let isDown = NIOLockedValueBox(false)

    func schemaHistory() async throws -> SchemaHistory { SchemaHistory(DemoDataset.schema) }
    func schemaInfo(version: Int?, grant: ScopeGrant) async throws -> SchemaInfo {
        SchemaInfo(schema: DemoDataset.schema, revision: 7, minRevision: 1)
    }
    func revisions() async throws -> (revision: Int64, minRevision: Int64) {
        if isDown.withLockedValue({ $0 }) { throw down }
        return (7, 1)
    }
    func snapshotPageJSON(
        of type: String, after: JSONValue?, limit: Int, version: Int?, fields: [String]?, grant: ScopeGrant
    )
        async throws -> [UInt8]
    {
        throw down
    }
    func changeFeed(after revision: Int64, limit: Int, byteBudget: Int, version: Int?) async throws -> ChangeFeed {
        throw down
    }
    func uniformFields(of type: String, fields: [String], version: Int?, grant: ScopeGrant) async throws
        -> UniformFields
    {
        throw down
    }
    func commit(_ changeSet: ChangeSet) async throws -> Int64 { throw down }
    func push(_ changeSet: PushedChangeSet, retention: Duration, version: Int?, grant: ScopeGrant) async throws
        -> PushResult
    {
        throw down
    }
    func register(_ seed: SeedRegistration) async throws -> RegisteredSeed { throw down }
    func registeredSeeds() async throws -> [RegisteredSeed] { throw down }
    func historyChains(at revisions: [Int64]) async throws -> [Int64: HistoryChain] { throw down }
    private var down: SyncStoreError { .storeUnavailable("the database restarts") }
}
