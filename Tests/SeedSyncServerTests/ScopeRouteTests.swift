import Foundation
import Hummingbird
import HummingbirdTesting
import SeedSyncModel
import SeedSyncSQLiteStore
import SeedSyncServer
import SeedSyncStore
import SeedSyncTesting
import Testing

/// Every endpoint a reader of one team calls on a dataset split by team (`Fixtures.clubsSchema`,
/// teams 1-3), with JWTs whose `app_metadata.teams` claim grants team values: what each answers,
/// and that nothing of another team reaches it.
@Suite struct ScopeRouteTests {
    /// The clubs store served with `TestIdentityProvider.teamJWT` and a shared cache, and `body` given a client and the store.
    func withClubsServer(
        _ body: @escaping @Sendable (any TestClientProtocol, SQLiteSyncStore) async throws -> Void
    ) async throws {
        try await withTemporaryDirectory { directory in
            let store = try await Fixtures.clubsStore(in: directory)
            let configuration = testConfiguration {
                $0.jwt = TestIdentityProvider.teamJWT
                $0.sharedCache = true
            }
            let app = try await buildApplication(store: store, configuration: configuration)
            try await app.test(.live) { client in try await body(client, store) }
        }
    }

    @Test func aTeamReadsItsRowsFromEveryEndpointAndNoCacheMayShareThem() async throws {
        try await withClubsServer { client, store in
            let one = try await TestIdentityProvider.teamToken([1])
            let schema = try decode(
                SchemaInfo.self, try await client.execute(uri: "/v1/schema", method: .get, headers: headers(token: one))
            )
            #expect(schema.rowCounts == ["teams": 1, "venues": 1, "events": 3, "tickets": 3])
            let page = try await client.execute(uri: "/v1/snapshot/events", method: .get, headers: headers(token: one))
            #expect(
                try SnapshotPage(json: JSONParser.parse(Array(buffer: page.body))).rows.map { $0[0] } == [
                    101, 102, 103,
                ])
            #expect(page.headers[.cacheControl] == "private, max-age=0")
            let ahead = try await client.execute(
                uri: "/v1/snapshot/events?notBefore=99", method: .get, headers: headers(token: one))
            #expect(ahead.status == .conflict && errorCode(ahead) == "revision_ahead")
            let tag = try #require(page.headers[.eTag])
            let again = try await client.execute(
                uri: "/v1/snapshot/events", method: .get, headers: headers(token: one, [.ifNoneMatch: tag]))
            #expect(again.status == .notModified)
            let shared = try await client.execute(
                uri: "/v1/snapshot/venues?notBefore=0", method: .get, headers: headers(token: one))
            #expect(shared.headers[.cacheControl]?.hasPrefix("public") == true, "a shared type's pages are everyone's")
            // Revision 2 changes team 2, revision 3 team 1.
            let start = try await store.revisions().revision
            try await store.commit(Self.edit(event: 201, team: 2))
            try await store.commit(Self.edit(event: 101, team: 1))
            let sync = try await client.execute(
                uri: "/v1/sync", method: .post, headers: headers(token: one), body: body(#"{"maxRevision": \#(start)}"#)
            )
            let answer = try SyncResponse(json: JSONParser.parse(Array(buffer: sync.body)))
            #expect(answer.scopes == [1] && answer.maxRevision == start + 2 && !answer.hasMore)
            #expect(answer.changeSets.map(\.revision) == [start + 2])
            let changes = try await client.execute(
                uri: "/v1/changes?after=\(start)&schemaVersion=1", method: .get, headers: headers(token: one))
            #expect(changes.headers[.cacheControl]?.hasPrefix("private") == true)
            let feed = try SyncResponse(json: JSONParser.parse(Array(buffer: changes.body)))
            #expect(feed.changeSets.map(\.revision) == [start + 2] && feed.scopes == [1])
            let global = try await client.execute(
                uri: "/v1/changes?after=\(start)&schemaVersion=1", method: .get, headers: headers())
            #expect(global.headers[.cacheControl]?.hasPrefix("public") == true)
            #expect(try SyncResponse(json: JSONParser.parse(Array(buffer: global.body))).scopes == nil)
            // A registered seed holds every team's rows: a reader of one team is offered none.
            _ = try await store.register(
                SeedRegistration(sha256: String(repeating: "a", count: 64), revision: start, schemaVersion: 1))
            let seeds = try await client.execute(uri: "/v1/seeds", method: .get, headers: headers(token: one))
            #expect(String(buffer: seeds.body) == #"{"seeds":[]}"#)
            let all = try await client.execute(uri: "/v1/seeds", method: .get, headers: headers())
            #expect(String(buffer: all.body).contains(String(repeating: "a", count: 64)))
        }
    }

    @Test func aTeamWritesItsRowsAloneAndATokenWithoutTheClaimIsRefused() async throws {
        try await withClubsServer { client, store in
            let revision = try await store.revisions().revision
            let one = try await TestIdentityProvider.teamToken([.string("1")])
            let push = #"""
                {"maxRevision": \#(revision), "changeSets": [
                  {"id": "mine", "types": ["events"], "events": {"create": [-1], "attributes": {"-1": {"team_id": 1, "title": "new", "venue_id": 1}}}},
                  {"id": "theirs", "types": ["events"], "events": {"create": [-1], "attributes": {"-1": {"team_id": 2, "title": "new", "venue_id": 1}}}}]}
                """#
            let answer = try SyncResponse(
                json: JSONParser.parse(
                    Array(
                        buffer: try await client.execute(
                            uri: "/v1/sync", method: .post, headers: headers(token: one), body: body(push)
                        ).body)))
            guard case .applied = answer.results[0].status, case .rejected(_, let message) = answer.results[1].status
            else { throw TestFailure("\(answer.results)") }
            #expect(message.contains("team 2, which this token does not grant"))
            #expect(answer.changeSets.count == 1 && answer.changeSets[0]["events"]?.create.count == 1)
            let claimless = try await TestIdentityProvider().token(claims: TestIdentityProvider.claims())
            let refused = try await client.execute(uri: "/v1/schema", method: .get, headers: headers(token: claimless))
            #expect(refused.status == .unauthorized)
            #expect(refused.headers[.wwwAuthenticate]?.contains("no claim app_metadata.teams") == true)
            let none = try await TestIdentityProvider.teamToken([])
            let empty = try await client.execute(
                uri: "/v1/snapshot/events", method: .get, headers: headers(token: none))
            #expect(try SnapshotPage(json: JSONParser.parse(Array(buffer: empty.body))).rows.isEmpty)
        }
    }

    @Test func aServerOfAScopedDatasetWillNotStartWithoutAScopeClaim() async throws {
        try await withTemporaryDirectory { directory in
            let store = try await Fixtures.clubsStore(in: directory)
            let error = await #expect(throws: KeySetError.self) {
                _ = try await buildApplication(
                    store: store,
                    configuration: testConfiguration {
                        $0.jwt = JWTConfiguration(keys: .secret(TestIdentityProvider.secret))
                    })
            }
            #expect(error?.code == .noScopeClaim && error?.reason.contains("--jwt-scope-claim") == true)
        }
    }

    /// A commit retitling `event` of `team`.
    static func edit(event: Int64, team: Int64) -> ChangeSet {
        ChangeSet(changes: [
            TypeChanges(
                type: "events", update: [.int(event)],
                attributes: [String(event): ["team_id": .int(team), "title": "edited", "venue_id": 1]])
        ])
    }
}
