import Foundation
import Hummingbird
import HummingbirdTesting
import NIOConcurrencyHelpers
import SeedSyncClient
import SeedSyncDemo
import SeedSyncModel
import SeedSyncSQLiteStore
import SeedSyncServer
import SeedSyncStore
import SeedSyncTesting
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The client against a real server on loopback, and against servers that misbehave on purpose.
@Suite struct SyncClientTests {
    static let token = "client-test-token"

    func withServer(
        changesBlockSize: Int64 = 1_000, _ test: @escaping @Sendable (URL, SQLiteSyncStore) async throws -> Void
    ) async throws {
        try await withTemporaryDirectory { directory in
            let store = try await Fixtures.demoStore(events: 300, locations: 10, in: directory)
            try await ChangeGenerator.mutate(store, changes: 25, seed: 8)
            try await withLiveServer(store, token: Self.token, configure: { $0.changesBlockSize = changesBlockSize }) {
                url in try await test(url, store)
            }
        }
    }

    func client(
        _ url: URL, token: String? = token, retry: RetryPolicy = .none, limit: Int = 64 << 20,
        timeout: TimeInterval = 10
    ) -> SyncClient {
        SyncClient(
            configuration: .init(
                serverURL: url, token: token, requestTimeout: timeout, maxResponseSize: limit, retry: retry))
    }

    @Test func readsSchemaSnapshotsAndChangeFeeds() async throws {
        try await withServer { url, store in
            let client = client(url)
            let schema = try await client.schema()
            #expect(schema.schema == DemoDataset.schema)
            #expect(schema.revision == 26)
            let page = try await client.snapshotPage(of: "events", after: 10, limit: 50)
            #expect(page == (try await store.snapshotPage(of: "events", after: 10, limit: 50)))
            let feed = try await client.sync(from: 1, limit: 10)
            #expect(feed.changeSets.map(\.revision) == Array(2...11))
            #expect(feed.hasMore)
        }
    }

    @Test func readsTheLogInBlocksUpToTheHead() async throws {
        try await withServer(changesBlockSize: 10) { url, store in
            let client = client(url)
            let first = try await client.changes(after: 1, schemaVersion: 1)
            #expect(first.changeSets.map(\.revision) == Array(2...10))
            #expect(first.hasMore)
            let head = try await client.changes(after: 20, schemaVersion: 1)
            #expect(head.changeSets.map(\.revision) == Array(21...26))
            #expect(!head.hasMore)
            let limited = try await client.changes(after: 10, schemaVersion: 1, limit: 3)
            #expect(limited.changeSets.map(\.revision) == [11, 12, 13])
            var revisions: [Int64?] = []
            for try await answer in client.changeFeed(from: 1, limit: 1_000, schemaVersion: 1) {
                revisions += answer.changeSets.map(\.revision)
            }
            #expect(revisions == Array(2...26))
            #expect(try await answeredRequests("/v1/changes", on: url) == 3 + 3)
            #expect(try await answeredRequests("/v1/sync", on: url) == 0)
            // Asked to, the feed reads the origin alone.
            var synced: [Int64?] = []
            for try await answer in client.changeFeed(from: 20, limit: 1_000, schemaVersion: 1, readsLog: false) {
                synced += answer.changeSets.map(\.revision)
            }
            #expect(synced == Array(21...26))
            #expect(try await answeredRequests("/v1/changes", on: url) == 6)
            #expect(try await answeredRequests("/v1/sync", on: url) == 1)
            await #expect { try await client.changes(after: 0, schemaVersion: 1) } throws: {
                ($0 as? SyncClientError)?.code == .historyExpired
            }
        }
    }

    /// A server that predates `GET /v1/changes` (404) is read with `POST /v1/sync`.
    @Test func aServerWithoutLogReadsIsSynced() async throws {
        let server = MisbehavingServer()
        server.plan([
            .body(
                #"{"maxRevision":3,"hasMore":false,"changeSets":[{"revision":2,"types":[]},{"revision":3,"types":[]}]}"#
            )
        ])
        try await server.run { url in
            var revisions: [Int64?] = []
            for try await answer in client(url).changeFeed(from: 1, limit: 1_000, schemaVersion: 1) {
                revisions += answer.changeSets.map(\.revision)
            }
            #expect(revisions == [2, 3])
            #expect(server.requests == 1)
        }
    }

    /// Compression is asked for unless the server is on this machine; answers read the same either way.
    @Test func asksForGzipExceptOnLoopback() async throws {
        for (host, expected) in [
            ("127.0.0.1", false), ("localhost", false), ("[::1]", false), ("127.1.2.3", false),
            ("sync.example.com", true), ("10.0.0.1", true),
        ] {
            let configuration = SyncClient.Configuration(serverURL: URL(string: "http://\(host):8080")!, token: nil)
            #expect(configuration.acceptsGzip == expected, "\(host)")
        }
        try await withServer { url, store in
            var configuration = SyncClient.Configuration(serverURL: url, token: Self.token, retry: .none)
            configuration.acceptsGzip = true
            let client = SyncClient(configuration: configuration)
            let page = try await client.snapshotPage(of: "events", after: nil, limit: 300)
            #expect(page == (try await store.snapshotPage(of: "events", after: nil, limit: 300)))
            #expect(try await client.sync(from: 1).changeSets.count == 25)
        }
    }

    @Test func mapsServerErrorsToCodes() async throws {
        try await withServer { url, _ in
            await #expect { try await client(url, token: nil).schema() } throws: {
                ($0 as? SyncClientError)?.code == .unauthorized
            }
            await #expect { try await client(url).sync(from: 0) } throws: { error in
                let error = error as? SyncClientError
                return error?.code == .historyExpired && error?.minRevision == 1 && error?.status == 410
            }
            await #expect { try await client(url).sync(from: 99) } throws: {
                ($0 as? SyncClientError)?.code == .revisionAhead
            }
            await #expect { try await client(url).snapshotPage(of: "nope", after: nil, limit: 1) } throws: {
                ($0 as? SyncClientError)?.serverCode == "unknown_type"
            }
        }
    }

    @Test func refusesAnswersOverTheLimit() async throws {
        try await withServer { url, _ in
            await #expect {
                try await client(url, limit: 1_000).snapshotPage(of: "events", after: nil, limit: 300)
            } throws: {
                ($0 as? SyncClientError)?.code == .responseTooLarge
            }
        }
    }

    /// The limit is exact: an answer of `limit` bytes is accepted and one of `limit + 1` refused,
    /// whether the server declares its length, sends it gzip-compressed (the limit counts the
    /// inflated bytes) or chunked without a length.
    @Test func theResponseLimitIsExactDeclaredInflatedAndChunked() async throws {
        try await withServer { url, _ in
            let measuring = client(url)
            _ = try await measuring.snapshotPage(of: "events", after: nil, limit: 300)
            let size = Int(measuring.bytesReceived)
            for gzip in [false, true] {
                var configuration = SyncClient.Configuration(
                    serverURL: url, token: Self.token, maxResponseSize: size, retry: .none, acceptsGzip: gzip)
                let page = try await SyncClient(configuration: configuration).snapshotPage(
                    of: "events", after: nil, limit: 300)
                #expect(page.rows.count == 300, "gzip \(gzip): \(size) bytes with a limit of \(size)")
                configuration.maxResponseSize = size - 1
                await #expect {
                    try await SyncClient(configuration: configuration).snapshotPage(
                        of: "events", after: nil, limit: 300)
                } throws: { ($0 as? SyncClientError)?.code == .responseTooLarge }
            }
            // The compressed answer's declared length is far under the limit: the inflated bytes were counted.
            var request = URLRequest(url: url.appendingPathComponent("v1/snapshot/events"))
            request.url = URL(string: request.url!.absoluteString + "?limit=300")
            request.setValue("Bearer \(Self.token)", forHTTPHeaderField: "Authorization")
            request.setValue("gzip", forHTTPHeaderField: "Accept-Encoding")
            let (_, response) = try await TestHTTP.data(for: request)
            #expect(response.value(forHTTPHeaderField: "Content-Encoding") == "gzip")
        }
        let stub = MisbehavingServer()
        try await stub.run { url in
            let info = SchemaInfo(schema: DemoDataset.schema, revision: 1, minRevision: 1)
            let json = String(decoding: try JSONEncoder().encode(info), as: UTF8.self)
            stub.plan([.chunked(json)])
            let schema = try? await client(url, limit: json.utf8.count).schema()
            #expect(schema?.revision == 1, "chunked: \(json.utf8.count) bytes with a limit of \(json.utf8.count)")
            stub.plan([.chunked(json)])
            await #expect { try await client(url, limit: json.utf8.count - 1).schema() } throws: {
                ($0 as? SyncClientError)?.code == .responseTooLarge
            }
        }
    }

    /// The tests' own requests (`TestHTTP`) end when their caller is cancelled, without waiting
    /// for the answer (which the session may lose).
    @Test func aTestsOwnRequestEndsWhenItsCallerIsCancelled() async throws {
        let stub = MisbehavingServer()
        try await stub.run { url in
            stub.plan([.slow(seconds: 8)])
            let started = ContinuousClock.now
            let request = Task {
                try await TestHTTP.data(for: URLRequest(url: url.appendingPathComponent("v1/schema")))
            }
            try await Task.sleep(for: .milliseconds(200))
            request.cancel()
            await #expect { try await request.value } throws: { ($0 as? URLError)?.code == .cancelled }
            #expect(ContinuousClock.now - started < .seconds(6), "cancelled, it waited for the slow answer")
        }
    }

    @Test func unreachableServersFailAfterBoundedRetries() async throws {
        let retries = NIOLockedValueBox(0)
        let client = SyncClient(
            configuration: .init(
                serverURL: URL(string: "http://127.0.0.1:1")!, token: nil, requestTimeout: 2,
                retry: RetryPolicy(maxAttempts: 3, baseDelay: 0.01)),
            onRetry: { _, _, _ in retries.withLockedValue { $0 += 1 } }
        )
        await #expect { try await client.schema() } throws: { ($0 as? SyncClientError)?.code == .unreachable }
        #expect(retries.withLockedValue { $0 } == 2)
    }

    /// A server's `Retry-After` replaces the computed delay but never exceeds `maxDelay`: an hour
    /// asked for is 10 s waited.
    @Test func retryAfterIsCappedAtTheLongestDelay() {
        let policy = RetryPolicy(maxAttempts: 5, baseDelay: 0.2, maxDelay: 10)
        #expect(policy.delay(afterAttempt: 1, retryAfter: 3600) == 10)
        #expect(policy.delay(afterAttempt: 1, retryAfter: 2) == 2)
        #expect(policy.delay(afterAttempt: 1, retryAfter: -5) == 0)
    }

    @Test func retries5xxAnd429ThenSucceeds() async throws {
        let stub = MisbehavingServer()
        try await stub.run { url in
            stub.plan([.status(503), .status(429, retryAfter: "0"), .ok])
            let schema = try await client(url, retry: RetryPolicy(maxAttempts: 5, baseDelay: 0.01)).schema()
            #expect(schema.dataset == "demo")
            #expect(stub.requests == 3)

            stub.plan(Array(repeating: .status(500), count: 10))
            await #expect {
                try await client(url, retry: RetryPolicy(maxAttempts: 4, baseDelay: 0.01)).schema()
            } throws: {
                ($0 as? SyncClientError)?.status == 500
            }
            #expect(stub.requests == 4)

            stub.plan([.status(404), .ok])
            await #expect {
                try await client(url, retry: RetryPolicy(maxAttempts: 4, baseDelay: 0.01)).schema()
            } throws: {
                ($0 as? SyncClientError)?.code == .serverError
            }
            #expect(stub.requests == 1, "4xx are not retried")
        }
    }

    @Test func malformedAndSlowAnswersFail() async throws {
        let stub = MisbehavingServer()
        try await stub.run { url in
            stub.plan([.body("{not json")])
            await #expect { try await client(url).schema() } throws: {
                ($0 as? SyncClientError)?.code == .malformedResponse
            }
            stub.plan([.body(#"{"maxRevision": 7, "hasMore": false, "changeSets": [{"revision": 7, "types": []}]}"#)])
            await #expect { try await client(url).sync(from: 5) } throws: {
                ($0 as? SyncClientError)?.code == .malformedResponse
            }
            stub.plan([.body(#"{"maxRevision": 4, "hasMore": false, "changeSets": []}"#)])
            await #expect { try await client(url).sync(from: 5) } throws: {
                ($0 as? SyncClientError)?.code == .malformedResponse
            }
            // "More" without anything would make a catch-up loop forever.
            stub.plan([.body(#"{"maxRevision": 5, "hasMore": true, "changeSets": []}"#)])
            await #expect { try await client(url).sync(from: 5) } throws: {
                ($0 as? SyncClientError)?.code == .malformedResponse
            }
            // Revisions past Int64.max (the next one wraps to Int64.min): refused, not an overflow (a crash).
            let last =
                #"{"maxRevision": 9223372036854775807, "hasMore": false, "changeSets": [{"revision": 9223372036854775807, "types": []}, {"revision": -9223372036854775808, "types": []}]}"#
            stub.plan([.body(last)])
            await #expect { try await client(url).sync(from: .max - 1) } throws: {
                ($0 as? SyncClientError)?.code == .malformedResponse
            }
            stub.plan([.body(#"{"maxRevision": 9223372036854775807, "hasMore": false, "changeSets": []}"#)])
            let atTheEnd = try? await client(url).sync(from: .max)
            #expect(atTheEnd?.maxRevision == .max, "a client at the last revision there is")
            stub.plan([.slow(seconds: 5)])
            await #expect { try await client(url, timeout: 1).schema() } throws: {
                ($0 as? SyncClientError)?.code == .unreachable
            }
        }
    }

    /// A log read that names its scope values is refused an answer read for others, or for every
    /// value: a cache that keys answers without the query would hand one team's log to another.
    @Test func aLogReadForSomeScopesRefusesAnAnswerForOthers() async throws {
        let stub = MisbehavingServer()
        try await stub.run { url in
            let mine = ScopeList([.int(1)])
            for answered in [#""scopes": [2], "#, "", #""scopes": [1, 2], "#] {
                stub.plan([.body(#"{\#(answered)"maxRevision": 9, "hasMore": false, "changeSets": []}"#)])
                await #expect("\(answered)") {
                    try await client(url).changes(after: 5, schemaVersion: 1, scopes: mine)
                } throws: {
                    ($0 as? SyncClientError)?.code == .malformedResponse && "\($0)".contains("scopes=1")
                }
            }
            stub.plan([.body(#"{"scopes": [1], "maxRevision": 9, "hasMore": false, "changeSets": []}"#)])
            let answer = try await client(url).changes(after: 5, schemaVersion: 1, scopes: mine)
            #expect(answer.maxRevision == 9 && answer.scopes == [1])
        }
    }

    /// An `applied` result must map exactly the temporary keys its change set created: a row left
    /// under its temporary key would stay beside the server's copy (found by scripts/suites/hostile-servers.sh).
    @Test func anAppliedResultMustMapEachTemporaryKeyItCreated() async throws {
        let created = TypeChanges(
            type: "locations", create: [-1],
            attributes: ["-1": ["name": "Hall", "city": "Oslo", "latitude": 1.5, "longitude": 2.5]])
        let pushed = PushedChangeSet(id: "edit-1", changeSet: ChangeSet(changes: [created]))
        @Sendable func answer(keys: String) -> String {
            #"{"maxRevision": 6, "hasMore": false, "changeSets": [{"revision": 6, "types": []}], "results": [{"id": "edit-1", "status": "applied", "revision": 6, "keys": \#(keys)}]}"#
        }
        let stub = MisbehavingServer()
        try await stub.run { url in
            for wrong in [
                #"{}"#, #"{"locations": {"-2": 9}}"#, #"{"locations": {"-1": 9, "-2": 10}}"#,
                #"{"locations": {"-1": "9"}}"#,
            ] {
                stub.plan([.body(answer(keys: wrong))])
                await #expect("keys \(wrong)") { try await client(url).sync(from: 5, pushing: [pushed]) } throws: {
                    ($0 as? SyncClientError)?.code == .malformedResponse && "\($0)".contains("edit-1")
                }
            }
            stub.plan([.body(answer(keys: #"{"locations": {"-1": 9}}"#))])
            let response = try await client(url).sync(from: 5, pushing: [pushed])
            #expect(response.results.count == 1)
        }
    }

    /// A request ends as soon as its task is cancelled, whatever the transport does: also when
    /// the task was cancelled before the request started.
    @Test(arguments: [false, true]) func aCancelledRequestEndsAtOnce(cancelledBeforeItStarts: Bool) async throws {
        let stub = MisbehavingServer()
        try await stub.run { url in
            stub.plan([.slow(seconds: 15)])
            let client = client(url, timeout: 60)
            let started = ContinuousClock.now
            let request = Task {
                if cancelledBeforeItStarts { withUnsafeCurrentTask { $0?.cancel() } }
                return try await client.schema()
            }
            if !cancelledBeforeItStarts {
                try await Task.sleep(for: .milliseconds(300))
                request.cancel()
            }
            await #expect(throws: (any Error).self) { try await request.value }
            // Well under the answer's 15 s, with room for a loaded machine.
            #expect(ContinuousClock.now - started < .seconds(10), "not the 15 s of the answer")
        }
    }

}

/// A real HTTP server on loopback that answers `/v1/schema` and `/v1/sync` as planned: the only
/// way to get failures a correct server never produces.
final class MisbehavingServer: Sendable {
    enum Answer: Sendable {
        case ok
        case status(Int, retryAfter: String? = nil)
        case body(String)
        /// The text in two chunks, without a length (chunked transfer encoding).
        case chunked(String)
        case slow(seconds: Double)
    }

    private let state = NIOLockedValueBox<(answers: [Answer], requests: Int)>(([], 0))

    /// Replaces the planned answers and resets the request count.
    func plan(_ answers: [Answer]) {
        state.withLockedValue { $0 = (answers, 0) }
    }

    var requests: Int { state.withLockedValue { $0.requests } }

    func run(_ test: @escaping @Sendable (URL) async throws -> Void) async throws {
        let router = Router()
        router.get("v1/schema") { _, _ in try await self.answer() }
        router.post("v1/sync") { _, _ in try await self.answer() }
        router.get("v1/changes") { _, _ in try await self.answer() }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await app.test(.live) { client in try await test(URL(string: "http://127.0.0.1:\(client.port!)")!) }
    }

    private func answer() async throws -> Response {
        let next = state.withLockedValue { state -> Answer in
            state.requests += 1
            return state.answers.isEmpty ? .ok : state.answers.removeFirst()
        }
        switch next {
        case .ok:
            let info = SchemaInfo(schema: DemoDataset.schema, revision: 1, minRevision: 1)
            return Self.json(String(decoding: try JSONEncoder().encode(info), as: UTF8.self))
        case .status(let code, let retryAfter):
            var headers: HTTPFields = [:]
            if let retryAfter { headers[.retryAfter] = retryAfter }
            return Response(status: .init(code: code), headers: headers)
        case .body(let text):
            return Self.json(text)
        case .chunked(let text):
            let bytes = Array(text.utf8)
            let halves = [
                ByteBuffer(bytes: bytes.prefix(bytes.count / 2)), ByteBuffer(bytes: bytes.dropFirst(bytes.count / 2)),
            ]
            let (stream, continuation) = AsyncStream.makeStream(of: ByteBuffer.self)
            for half in halves { continuation.yield(half) }
            continuation.finish()
            return Response(
                status: .ok, headers: [.contentType: "application/json"], body: .init(asyncSequence: stream))
        case .slow(let seconds):
            try await Task.sleep(nanoseconds: UInt64(seconds * 1_000_000_000))
            return Self.json("{}")
        }
    }

    private static func json(_ text: String) -> Response {
        Response(
            status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}
