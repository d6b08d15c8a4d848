import CompressNIO
import Foundation
import GRDB
import Hummingbird
import HummingbirdTesting
import NIOCore
import SeedSyncDemo
import SeedSyncModel
import SeedSyncSQLiteStore
import SeedSyncServer
import SeedSyncStore
import SeedSyncTesting
import Testing

/// Every endpoint and every error status, through the router without sockets, on every store:
/// each test body runs once per backend.
@Suite struct RouterTests {
    func withApp(
        events: Int = 120,
        mutations: Int = 10,
        configuration: ServerConfiguration = testConfiguration(),
        _ test: @escaping @Sendable (any TestClientProtocol, any MaintainedSyncStore) async throws -> Void
    ) async throws {
        for backend in StoreBackend.tested {
            try await backend.withDemoStore(events: events, locations: 10) { store in
                try await ChangeGenerator.mutate(store, changes: mutations, seed: 2)
                let app = try await buildApplication(store: store, configuration: configuration)
                try await app.test(.router) { client in try await test(client, store) }
            }
        }
    }

    @Test func healthNeedsNoToken() async throws {
        try await withApp { client, _ in
            try await client.execute(uri: "/health", method: .get) { response in
                #expect(response.status == .ok)
                #expect(String(buffer: response.body) == #"{"status":"ok"}"#)
            }
        }
    }

    @Test func schemaAnswersWithRevisions() async throws {
        try await withApp { client, _ in
            try await client.execute(uri: "/v1/schema", method: .get, headers: headers()) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType] == "application/json")
                let info = try decode(SchemaInfo.self, response)
                #expect(info.schema == DemoDataset.schema)
                #expect(info.revision == 11)
                #expect(info.minRevision == 1)
            }
        }
    }

    @Test func tokensAreRequiredAndRolesEnforced() async throws {
        try await withApp { client, _ in
            for token in [nil, "wrong", ""] as [String?] {
                try await client.execute(uri: "/v1/schema", method: .get, headers: headers(token: token)) { response in
                    #expect(response.status == .unauthorized)
                    // RFC 6750: a request without a token is told the scheme, one with an unknown token why.
                    let challenge =
                        token?.isEmpty != false
                        ? "Bearer"
                        : #"Bearer error="invalid_token", error_description="a valid bearer token is required""#
                    #expect(response.headers[.wwwAuthenticate] == challenge)
                    #expect(errorCode(response) == "unauthorized")
                }
            }
            try await client.execute(
                uri: "/v1/schema", method: .get, headers: [.authorization: "Basic \(TestTokens.read)"]
            ) { response in
                #expect(response.status == .unauthorized)
            }
            try await client.execute(uri: "/v1/schema", method: .get, headers: headers(token: "read-token-2")) {
                response in
                #expect(response.status == .ok)
            }
            try await client.execute(uri: "/v1/schema", method: .get, headers: headers(token: TestTokens.admin)) {
                response in
                #expect(response.status == .ok)
            }
            try await client.execute(uri: "/v1/admin/changes", method: .post, headers: headers(), body: body("{}")) {
                response in
                #expect(response.status == .forbidden)
                #expect(errorCode(response) == "forbidden")
            }
            try await client.execute(
                uri: "/v1/admin/changes", method: .post, headers: headers(token: nil), body: body("{}")
            ) { response in
                #expect(response.status == .unauthorized)
            }
        }
    }

    @Test func anonymousServersServeWithoutTokens() async throws {
        try await withApp(configuration: testConfiguration { $0.tokens = nil }) { client, _ in
            try await client.execute(uri: "/v1/schema", method: .get) { response in
                #expect(response.status == .ok)
            }
        }
    }

    @Test func snapshotPagesAndTheirErrors() async throws {
        try await withApp(events: 120) { client, store in
            try await client.execute(uri: "/v1/snapshot/locations?limit=4", method: .get, headers: headers()) {
                response in
                let page = try decode(SnapshotPage.self, response)
                #expect(page.type == "locations")
                #expect(page.revision == 11)
                #expect(page.columns == ["id", "name", "city", "latitude", "longitude", "revision"])
                #expect(page.rows.count == 4)
                #expect(page.next == 4)
            }
            let expected = try await store.snapshotPage(of: "events", after: 100, limit: 1_000)
            // The type is a path segment: percent-encoded as any (`ev%65nts` is `events`).
            for uri in ["/v1/snapshot/events?after=100", "/v1/snapshot/ev%65nts?after=100"] {
                try await client.execute(uri: uri, method: .get, headers: headers()) { response in
                    let page = try decode(SnapshotPage.self, response)
                    #expect(page == expected, "\(uri)")
                }
            }
            try await client.execute(uri: "/v1/snapshot/nope", method: .get, headers: headers()) { response in
                #expect(response.status == .notFound)
                #expect(errorCode(response) == "unknown_type")
            }
            for query in ["after=abc", "after=1.5", "limit=0", "limit=-3", "limit=ten"] {
                try await client.execute(uri: "/v1/snapshot/events?\(query)", method: .get, headers: headers()) {
                    response in
                    #expect(response.status == .badRequest, "\(query)")
                }
            }
        }
    }

    @Test func snapshotLimitIsCappedByTheServer() async throws {
        try await withApp(events: 50, configuration: testConfiguration { $0.maxSnapshotLimit = 7 }) { client, _ in
            try await client.execute(uri: "/v1/snapshot/events?limit=1000", method: .get, headers: headers()) {
                response in
                let page = try decode(SnapshotPage.self, response)
                #expect(page.rows.count == 7)
            }
        }
    }

    @Test func syncLimitsHaveADefaultAndAServerMaximum() async throws {
        let configuration = testConfiguration {
            $0.defaultSyncLimit = 2
            $0.maxSyncLimit = 3
        }
        try await withApp(configuration: configuration) { client, _ in
            for (request, expected) in [
                (#"{"maxRevision": 1}"#, [2, 3] as [Int64]), (#"{"maxRevision": 1, "limit": 100}"#, [2, 3, 4]),
            ] {
                try await client.execute(uri: "/v1/sync", method: .post, headers: headers(), body: body(request)) {
                    response in
                    let sync = try decode(SyncResponse.self, response)
                    #expect(sync.changeSets.map(\.revision) == expected)
                    #expect(sync.hasMore)
                }
            }
        }
    }

    @Test func syncAnswersStayWithinTheByteBudget() async throws {
        try await withApp(configuration: testConfiguration { $0.syncByteBudget = 1 }) { client, _ in
            try await client.execute(
                uri: "/v1/sync", method: .post, headers: headers(), body: body(#"{"maxRevision": 1, "limit": 100}"#)
            ) { response in
                let sync = try decode(SyncResponse.self, response)
                #expect(sync.changeSets.map(\.revision) == [2], "one change set even when it alone exceeds the budget")
                #expect(sync.hasMore)
            }
        }
    }

    @Test func syncReturnsChangeSetsInOrder() async throws {
        try await withApp { client, _ in
            try await client.execute(
                uri: "/v1/sync", method: .post, headers: headers(),
                body: body(#"{"maxRevision": 1, "changeSets": [], "limit": 4}"#)
            ) { response in
                let sync = try decode(SyncResponse.self, response)
                #expect(sync.changeSets.map(\.revision) == [2, 3, 4, 5])
                #expect(sync.maxRevision == 5)
                #expect(sync.hasMore)
            }
            try await client.execute(
                uri: "/v1/sync", method: .post, headers: headers(), body: body(#"{"maxRevision": 5, "changeSets": []}"#)
            ) { response in
                let sync = try decode(SyncResponse.self, response)
                #expect(sync.changeSets.map(\.revision) == Array(6...11))
                #expect(sync.hasMore == false)
            }
            try await client.execute(
                uri: "/v1/sync", method: .post, headers: headers(), body: body(#"{"maxRevision": 11}"#)
            ) { response in
                let text = String(buffer: response.body)
                #expect(text.hasPrefix(#"{"maxRevision":11,"hasMore":false,"changeSets":[],"chain":""#))
                #expect(text.hasSuffix(#"","chains":[]}"#))
                let decoded = try decode(SyncResponse.self, response)
                #expect(decoded.chain != nil)
            }
        }
    }

    @Test func pushesApplyInOrderAndAnswerWithAResultEach() async throws {
        let location =
            #""locations": {"create": [-1], "attributes": {"-1": {"name": "Hall", "city": "Oslo", "latitude": 59.9, "longitude": 10.7}}}"#
        let event =
            #""events": {"create": [-2], "attributes": {"-2": {"title": "Gig", "starts_at": "2026-12-01T20:00:00Z", "location_id": -1, "capacity": 100, "cancelled": false}}}"#
        let request = #"""
            {"maxRevision": 11, "changeSets": [
              {"id": "first", "types": ["locations", "events"], \#(location), \#(event)},
              {"id": "invalid", "types": ["locations"], "locations": {"create": [-1], "attributes": {"-1": {"name": "No city"}}}},
              {"id": "third", "types": ["locations"], \#(location)}
            ]}
            """#
        try await withApp { client, _ in
            for attempt in 1...2 {
                try await client.execute(
                    uri: "/v1/sync", method: .post, headers: headers(token: TestTokens.write), body: body(request)
                ) { response in
                    #expect(response.status == .ok)
                    let sync = try decode(SyncResponse.self, response)
                    #expect(sync.results.map(\.id) == ["first", "invalid", "third"])
                    guard case .applied(12, let keys) = sync.results[0].status,
                        let newEvent = keys["events"]?["-2"]?.keyString
                    else {
                        Issue.record("attempt \(attempt): \(sync.results[0])")
                        return
                    }
                    #expect(keys["locations"] == ["-1": 11], "after the largest location key, 10")
                    guard case .rejected("invalid_change_set", let message) = sync.results[1].status else {
                        Issue.record("\(sync.results[1])")
                        return
                    }
                    #expect(message.contains("locations[-1].city"))
                    #expect(sync.results[2].status == .applied(revision: 13, keys: ["locations": ["-1": 12]]))
                    // The catch-up holds both, the created rows marked with their temporary keys.
                    #expect(sync.changeSets.map(\.revision) == [12, 13] && sync.maxRevision == 13)
                    #expect(sync.changeSets[0]["locations"]?.attributes["11"]?["__oldId__"] == -1)
                    #expect(sync.changeSets[0]["events"]?.attributes[newEvent]?["__oldId__"] == -2)
                    #expect(sync.changeSets[0]["events"]?.attributes[newEvent]?["location_id"] == 11)
                    #expect(sync.changeSets[1]["locations"]?.attributes["12"]?["__oldId__"] == -1)
                }
            }
            // Others catch up without the marks.
            try await client.execute(
                uri: "/v1/sync", method: .post, headers: headers(), body: body(#"{"maxRevision": 11}"#)
            ) { response in
                let sync = try decode(SyncResponse.self, response)
                #expect(sync.changeSets.map(\.revision) == [12, 13] && sync.results.isEmpty)
                #expect(sync.changeSets[0]["locations"]?.attributes["11"]?["__oldId__"] == nil)
                #expect(!String(buffer: response.body).contains("results"))
            }
        }
    }

    @Test func pushesAreBoundedAndNeedAWriteToken() async throws {
        let one =
            #"{"id": "ID", "types": ["locations"], "locations": {"create": [-1], "attributes": {"-1": {"name": "N", "city": "C", "latitude": 1, "longitude": 2}}}}"#
        let tooMany =
            #"{"maxRevision": 11, "changeSets": [\#((0...100).map { one.replacingOccurrences(of: "ID", with: "c\($0)") }.joined(separator: ","))]}"#
        try await withApp { client, _ in
            try await client.execute(
                uri: "/v1/sync", method: .post, headers: headers(token: TestTokens.admin), body: body(tooMany)
            ) { response in
                #expect(response.status == .contentTooLarge)
                #expect(errorCode(response) == "too_many_change_sets")
            }
            // Nothing of it was applied.
            try await client.execute(
                uri: "/v1/sync", method: .post, headers: headers(), body: body(#"{"maxRevision": 11}"#)
            ) { response in
                let sync = try decode(SyncResponse.self, response)
                #expect(sync.maxRevision == 11)
            }
            for (token, status) in [
                (TestTokens.read, HTTPResponse.Status.forbidden), (TestTokens.write, .ok), (TestTokens.admin, .ok),
            ] {
                try await client.execute(
                    uri: "/v1/sync", method: .post, headers: headers(token: token),
                    body: body(#"{"maxRevision": 11, "changeSets": [\#(one)]}"#)
                ) { response in
                    #expect(response.status == status, "\(token)")
                }
            }
            // A client ahead of the server has nothing of its applied.
            try await client.execute(
                uri: "/v1/sync", method: .post, headers: headers(token: TestTokens.write),
                body: body(
                    #"{"maxRevision": 99, "changeSets": [{"id": "ahead", "types": ["locations"], "locations": {"delete": [1], "attributes": {"1": {"revision": 1}}}}]}"#
                )
            ) { response in
                #expect(response.status == .conflict)
                #expect(errorCode(response) == "revision_ahead")
            }
            try await client.execute(
                uri: "/v1/sync", method: .post, headers: headers(), body: body(#"{"maxRevision": 11}"#)
            ) { response in
                let sync = try decode(SyncResponse.self, response)
                #expect(
                    sync.maxRevision == 12,
                    "the write token's push made 12 (the admin's, with the same id, nothing); the one from ahead nothing"
                )
            }
            // A write token may not use the admin endpoints.
            try await client.execute(
                uri: "/v1/admin/changes", method: .post, headers: headers(token: TestTokens.write),
                body: body(#"{"types": []}"#)
            ) { response in
                #expect(response.status == .forbidden)
            }
        }
    }

    @Test func syncErrors() async throws {
        try await withApp { client, _ in
            try await client.execute(
                uri: "/v1/sync", method: .post, headers: headers(), body: body(#"{"maxRevision": 0, "changeSets": []}"#)
            ) { response in
                #expect(response.status == .gone)
                let error = try decode(ErrorResponse.self, response).error
                #expect(error.code == "history_expired")
                #expect(error.minRevision == 1)
            }
            try await client.execute(
                uri: "/v1/sync", method: .post, headers: headers(),
                body: body(#"{"maxRevision": 12, "changeSets": []}"#)
            ) { response in
                #expect(response.status == .conflict)
                #expect(errorCode(response) == "revision_ahead")
            }
            try await client.execute(
                uri: "/v1/sync", method: .post, headers: headers(),
                body: body(#"{"maxRevision": 3, "changeSets": [{"id": "a", "types": []}]}"#)
            ) { response in
                #expect(response.status == .forbidden, "a read token may not push")
                #expect(errorCode(response) == "forbidden")
            }
            for bad in [
                #"{"maxRevision": "#, #"{"changeSets": []}"#, #"[1]"#, #"{"maxRevision": 3, "limit": 0}"#,
                #"{"maxRevision": -1}"#,
            ] {
                try await client.execute(uri: "/v1/sync", method: .post, headers: headers(), body: body(bad)) {
                    response in
                    #expect(response.status == .badRequest, "\(bad)")
                    #expect(errorCode(response) != nil)
                }
            }
        }
    }

    @Test func adminChangesCommitTheNextRevision() async throws {
        try await withApp { client, store in
            let changeSet =
                #"{"types":["events"],"events":{"create":[9001],"attributes":{"9001":{"title":"Launch","starts_at":"2026-12-01T18:00:00Z","location_id":3,"capacity":80,"cancelled":false}}}}"#
            try await client.execute(
                uri: "/v1/admin/changes", method: .post, headers: headers(token: TestTokens.admin),
                body: body(changeSet)
            ) { response in
                let commit = try decode(CommitResponse.self, response)
                #expect(response.status == .ok)
                #expect(commit.revision == 12)
            }
            let page = try await store.snapshotPage(of: "events", after: 9000, limit: 1)
            #expect(page.rows == [[9001, "Launch", "2026-12-01T18:00:00Z", .null, 3, 80, false, .null, 12]])
        }
    }

    @Test(arguments: [
        #"{"types":["nope"],"nope":{}}"#,
        #"{"types":["events"],"events":{"create":[9001],"attributes":{"9001":{"title":"T","starts_at":"2026-12-01T18:00:00Z","capacity":80,"cancelled":false,"colour":"red"}}}}"#,
        #"{"types":["events"],"events":{"create":[9001],"attributes":{"9001":{"title":"T","starts_at":"tomorrow","capacity":80,"cancelled":false}}}}"#,
        #"{"types":["events"],"events":{"create":[9001],"attributes":{"9001":{"starts_at":"2026-12-01T18:00:00Z","capacity":80,"cancelled":false}}}}"#,
        #"{"types":["events"],"events":{"create":[9001],"attributes":{"9001":{"title":"T","starts_at":"2026-12-01T18:00:00Z","capacity":80,"cancelled":false,"location_id":99999}}}}"#,
        #"{"types":["events"],"events":{"create":[1],"attributes":{"1":{"title":"T","starts_at":"2026-12-01T18:00:00Z","capacity":80,"cancelled":false}}}}"#,
        #"{"revision":40,"types":["events"],"events":{"delete":[1]}}"#,
    ])
    func invalidAdminChangesAre422AndWriteNothing(changeSet: String) async throws {
        try await withApp { client, store in
            let before = try await Fixtures.contents(of: store)
            try await client.execute(
                uri: "/v1/admin/changes", method: .post, headers: headers(token: TestTokens.admin),
                body: body(changeSet)
            ) { response in
                #expect(response.status == .unprocessableContent)
                #expect(errorCode(response) == "invalid_change_set")
            }
            #expect(try await store.schemaInfo().revision == 11)
            #expect(try await Fixtures.contents(of: store) == before)
        }
    }

    /// Another process holds the SQLite file's write lock (as `seed-server schema upgrade` does
    /// while it runs): an admin commit and a push are 503 `store_unavailable` with `Retry-After`,
    /// saying the file is locked, after the busy timeout; once the lock is free they succeed.
    @Test func writesThatMeetAnotherProcesssLockAre503() async throws {
        try await StoreBackend.sqlite.withDemoStore(events: 20, locations: 5) { store in
            let app = try await buildApplication(store: store, configuration: testConfiguration())
            var configuration = Configuration()
            configuration.allowsUnsafeTransactions = true  // the lock is held across accesses
            let other = try DatabaseQueue(path: (store as! SQLiteSyncStore).path, configuration: configuration)
            try await app.test(.router) { client in
                try await other.writeWithoutTransaction { db in try db.execute(sql: "BEGIN IMMEDIATE") }
                let changeSet =
                    #"{"types":["locations"],"locations":{"create":[900],"attributes":{"900":{"name":"Hall","city":"Bern","latitude":46.9,"longitude":7.4}}}}"#
                let push =
                    #"{"maxRevision": 1, "changeSets": [{"id": "p", "types": ["locations"], "locations": {"create": [-1], "attributes": {"-1": {"name": "Tent", "city": "Bern", "latitude": 46.9, "longitude": 7.4}}}}]}"#
                for (uri, token, json) in [
                    ("/v1/admin/changes", TestTokens.admin, changeSet), ("/v1/sync", TestTokens.write, push),
                ] {
                    try await client.execute(uri: uri, method: .post, headers: headers(token: token), body: body(json))
                    {
                        response in
                        #expect(response.status == .serviceUnavailable, "\(uri)")
                        #expect(errorCode(response) == "store_unavailable" && response.headers[.retryAfter] != nil)
                        #expect(String(buffer: response.body).contains("is locked by another process"))
                    }
                }
                try await other.writeWithoutTransaction { db in try db.execute(sql: "ROLLBACK") }
                try await client.execute(
                    uri: "/v1/admin/changes", method: .post, headers: headers(token: TestTokens.admin),
                    body: body(changeSet)
                ) { response in
                    #expect(response.status == .ok)
                }
            }
            try other.close()
        }
    }

    @Test func malformedAdminBodiesAre400() async throws {
        try await withApp { client, _ in
            for bad in ["", "{", #"{"types": "events"}"#, #"{"types": ["events"]}"#] {
                try await client.execute(
                    uri: "/v1/admin/changes", method: .post, headers: headers(token: TestTokens.admin), body: body(bad)
                ) { response in
                    #expect(response.status == .badRequest, "\(bad)")
                    #expect(errorCode(response) == "malformed_json")
                }
            }
        }
    }

    @Test func bodiesOverTheLimitAre413EvenWhenCompressed() async throws {
        try await withApp(configuration: testConfiguration { $0.maxRequestBodySize = 1_024 }) { client, _ in
            let large =
                #"{"maxRevision": 1, "changeSets": [], "padding": ""# + String(repeating: "x", count: 2_000) + #""}"#
            try await client.execute(uri: "/v1/sync", method: .post, headers: headers(), body: body(large)) {
                response in
                #expect(response.status == .contentTooLarge)
                #expect(errorCode(response) == "body_too_large")
            }
            // 2,000 bytes that gzip to far less than the limit: the decompressed size counts too.
            var plain = ByteBuffer(string: large)
            let compressed = try plain.compress(with: .gzip)
            #expect(compressed.readableBytes < 1_024)
            try await client.execute(
                uri: "/v1/sync", method: .post, headers: headers(token: TestTokens.read, [.contentEncoding: "gzip"]),
                body: compressed
            ) { response in
                #expect(response.status == .contentTooLarge)
            }
        }
    }

    @Test func gzipAndOtherRequestEncodings() async throws {
        try await withApp { client, _ in
            var plain = ByteBuffer(string: #"{"maxRevision": 9, "changeSets": []}"#)
            let compressed = try plain.compress(with: .gzip)
            try await client.execute(
                uri: "/v1/sync", method: .post, headers: headers(token: TestTokens.read, [.contentEncoding: "gzip"]),
                body: compressed
            ) { response in
                let sync = try decode(SyncResponse.self, response)
                #expect(sync.maxRevision == 11)
            }
            try await client.execute(
                uri: "/v1/sync", method: .post, headers: headers(token: TestTokens.read, [.contentEncoding: "gzip"]),
                body: body("not gzip")
            ) { response in
                #expect(response.status == .badRequest)
                #expect(errorCode(response) == "malformed_gzip")
            }
            try await client.execute(
                uri: "/v1/sync", method: .post, headers: headers(token: TestTokens.read, [.contentEncoding: "br"]),
                body: body("{}")
            ) { response in
                #expect(response.status == .unsupportedMediaType)
            }
        }
    }

    /// A sync request of exactly `size` bytes, padded with an unknown member.
    static func syncRequest(size: Int) -> ByteBuffer {
        let start = #"{"maxRevision": 11, "padding": ""#
        let end = #""}"#
        return ByteBuffer(string: start + String(repeating: "x", count: size - start.utf8.count - end.utf8.count) + end)
    }

    @Test func decompressedBodiesAreLimitedToTheByte() async throws {
        let limit = 8 << 20
        try await withApp(configuration: testConfiguration { $0.maxRequestBodySize = limit }) { client, _ in
            for (size, status) in [
                (limit, HTTPResponse.Status.ok), (limit + 1, .contentTooLarge), (9 << 20, .contentTooLarge),
            ] {
                var plain = Self.syncRequest(size: size)
                let compressed = try plain.compress(with: .gzip)
                try await client.execute(
                    uri: "/v1/sync", method: .post,
                    headers: headers(token: TestTokens.read, [.contentEncoding: "gzip"]), body: compressed
                ) { response in
                    #expect(response.status == status, "\(size) bytes decompressed")
                    if status != .ok { #expect(errorCode(response) == "body_too_large") }
                }
            }
        }
    }

    @Test func gzipBodiesMustBeOneWholeStream() async throws {
        try await withApp { client, _ in
            var plain = ByteBuffer(string: #"{"maxRevision": 11, "changeSets": []}"#)
            let compressed = try plain.compress(with: .gzip)
            var trailing = compressed
            trailing.writeString("junk")
            for bad in [compressed.getSlice(at: 0, length: compressed.readableBytes - 4)!, trailing] {
                try await client.execute(
                    uri: "/v1/sync", method: .post,
                    headers: headers(token: TestTokens.read, [.contentEncoding: "gzip"]), body: bad
                ) { response in
                    #expect(response.status == .badRequest)
                    #expect(errorCode(response) == "malformed_gzip")
                }
            }
        }
    }

    /// Request bodies are read with the strict parser: integers are integer literals, `null` is
    /// not an empty list, a member appears once.
    @Test(arguments: [
        #"{"maxRevision": 1.0}"#, #"{"maxRevision": 1e0}"#, #"{"maxRevision": 5, "changeSets": null}"#,
        #"{"maxRevision": 5, "maxRevision": 6}"#, #"{"maxRevision": 5, "limit": 2.5}"#,
        #"{"maxRevision": 5, "limit": null}"#,
    ])
    func syncRequestsAreParsedStrictly(request: String) async throws {
        try await withApp { client, _ in
            try await client.execute(uri: "/v1/sync", method: .post, headers: headers(), body: body(request)) {
                response in
                #expect(response.status == .badRequest)
                let error = try decode(ErrorResponse.self, response).error
                #expect(error.code == "malformed_json")
                #expect(
                    error.message.contains("maxRevision") || error.message.contains("changeSets")
                        || error.message.contains("limit"), "\(error.message)")
            }
        }
    }

    @Test func adminChangeSetsWithADuplicateMemberAre400AndWriteNothing() async throws {
        try await withApp { client, store in
            let before = try await Fixtures.contents(of: store)
            let changeSet =
                #"{"types":["events"],"events":{"delete":[1]},"events":{"create":[9001],"attributes":{"9001":{"title":"T","starts_at":"2026-12-01T18:00:00Z","capacity":80,"cancelled":false}}}}"#
            try await client.execute(
                uri: "/v1/admin/changes", method: .post, headers: headers(token: TestTokens.admin),
                body: body(changeSet)
            ) { response in
                #expect(response.status == .badRequest)
                let error = try decode(ErrorResponse.self, response).error
                #expect(error.code == "malformed_json")
                #expect(error.message.contains("duplicate member 'events'"), "\(error.message)")
            }
            #expect(try await Fixtures.contents(of: store) == before)
        }
    }

    @Test func headHealthIsAnsweredWithoutABody() async throws {
        try await withApp { client, _ in
            try await client.execute(uri: "/health", method: .head) { response in
                #expect(response.status == .ok)
                #expect(response.body.readableBytes == 0)
            }
        }
    }

    /// A name, key or header value the client sent is repeated in an error message at most 64
    /// characters long, then "…".
    @Test func errorsClipWhatTheClientSent() async throws {
        let long = String(repeating: "n", count: 10_000)
        try await withApp { client, _ in
            let requests: [(String, HTTPRequest.Method, HTTPFields, ByteBuffer?, String)] = [
                ("/v1/snapshot/\(long)", .get, headers(), nil, "unknown_type"),
                ("/v1/snapshot/events?after=\(long)", .get, headers(), nil, "invalid_key"),
                (
                    "/v1/admin/changes", .post, headers(token: TestTokens.admin),
                    body(#"{"types":["\#(long)"],"\#(long)":{}}"#), "invalid_change_set"
                ),
                (
                    "/v1/sync", .post, headers(token: TestTokens.read, [.contentEncoding: long]), body("{}"),
                    "unsupported_encoding"
                ),
                ("/v1/sync", .post, headers(), body(#"{"\#(long)": 1, "\#(long)": 2}"#), "malformed_json"),
            ]
            for (uri, method, fields, requestBody, code) in requests {
                try await client.execute(uri: uri, method: method, headers: fields, body: requestBody) { response in
                    let error = try decode(ErrorResponse.self, response).error
                    #expect(error.code == code)
                    #expect(error.message.count < 200, "\(code): \(error.message.count) characters")
                    #expect(error.message.contains(String(repeating: "n", count: 64) + "…"), "\(code)")
                }
            }
        }
    }

    @Test func unknownRoutesAndMethodsAreJSONErrors() async throws {
        try await withApp { client, _ in
            for (uri, method) in [
                ("/nope", HTTPRequest.Method.get), ("/v1/nope", .get), ("/v1/sync", .get), ("/v1/snapshot", .get),
            ] {
                try await client.execute(uri: uri, method: method, headers: headers()) { response in
                    #expect(response.status == .notFound, "\(method) \(uri)")
                    #expect(errorCode(response) == "not_found", "\(method) \(uri)")
                }
            }
        }
    }

    @Test func unexpectedErrorsAreABare500() async throws {
        let app = try await buildApplication(store: FailingStore(), configuration: testConfiguration())
        try await app.test(.router) { client in
            try await client.execute(
                uri: "/v1/sync", method: .post, headers: headers(), body: body(#"{"maxRevision": 1}"#)
            ) { response in
                #expect(response.status == .internalServerError)
                #expect(response.body.readableBytes == 0)
            }
        }
    }
}

/// A store that fails the way a broken disk would: the only way to reach a 500.
private struct FailingStore: SyncStore {
    struct DiskOnFire: Error {}
    func schemaHistory() async throws -> SchemaHistory { SchemaHistory(DemoDataset.schema) }
    func schemaInfo(version: Int?, grant: ScopeGrant) async throws -> SchemaInfo {
        SchemaInfo(schema: DemoDataset.schema, revision: 1, minRevision: 1)
    }
    func snapshotPageJSON(
        of type: String, after: JSONValue?, limit: Int, version: Int?, fields: [String]?, grant: ScopeGrant
    )
        async throws -> [UInt8]
    {
        throw DiskOnFire()
    }
    func changeFeed(after revision: Int64, limit: Int, byteBudget: Int, version: Int?) async throws -> ChangeFeed {
        throw DiskOnFire()
    }
    func uniformFields(of type: String, fields: [String], version: Int?, grant: ScopeGrant) async throws
        -> UniformFields
    {
        throw DiskOnFire()
    }
    func commit(_ changeSet: ChangeSet) async throws -> Int64 { throw DiskOnFire() }
    func push(_ changeSet: PushedChangeSet, retention: Duration, version: Int?, grant: ScopeGrant) async throws
        -> PushResult
    {
        throw DiskOnFire()
    }
    func register(_ seed: SeedRegistration) async throws -> RegisteredSeed { throw DiskOnFire() }
    func registeredSeeds() async throws -> [RegisteredSeed] { throw DiskOnFire() }
    func historyChains(at revisions: [Int64]) async throws -> [Int64: HistoryChain] {
        throw DiskOnFire()
    }
}
