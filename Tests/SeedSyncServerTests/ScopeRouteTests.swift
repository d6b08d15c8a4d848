import Foundation
import HTTPTypes
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
    /// The clubs store of `backend` served with `TestIdentityProvider.teamJWT` and a shared cache,
    /// and `body` given a client and the store.
    func withClubsServer(
        _ backend: StoreBackend = .sqlite,
        _ body: @escaping @Sendable (any TestClientProtocol, any MaintainedSyncStore) async throws -> Void
    ) async throws {
        try await backend.withStore(Fixtures.clubsSchema) { store in
            try await store.commit(Fixtures.clubsCreation(teams: 1...3, eventsPerTeam: 3))
            let configuration = testConfiguration {
                $0.jwt = TestIdentityProvider.teamJWT
                $0.sharedCache = true
            }
            let app = try await buildApplication(store: store, configuration: configuration)
            try await app.test(.live) { client in try await body(client, store) }
        }
    }

    /// `GET /v1/sizes` for a reader of one team sizes what it would download: its rows, and the
    /// change sets that show it something.
    @Test(arguments: StoreBackend.tested) func aTeamsSizesAreOfItsRowsAndChangeSets(backend: StoreBackend)
        async throws
    {
        try await withClubsServer(backend) { client, store in
            let start = try await store.revisions().revision
            try await store.commit(Fixtures.clubsRetitle(201, team: 2, "edited by team two, a long title"))
            try await store.commit(Fixtures.clubsRetitle(101, team: 1, "edited"))
            let one = try await TestIdentityProvider.teamToken([1])
            let all = try await TestIdentityProvider.teamToken([1, 2, 3])
            func sizes(_ token: String) async throws -> DownloadSizes {
                try decode(
                    DownloadSizes.self,
                    try await client.execute(
                        uri: "/v1/sizes?schemaVersion=1&after=\(start)", method: .get, headers: headers(token: token)))
            }
            let (mine, every) = (try await sizes(one), try await sizes(all))
            #expect(mine.snapshot?.rows == 8 && every.snapshot?.rows == 22, "\(mine) \(every)")
            let feed = try await store.changeFeed(
                after: start, limit: 10, byteBudget: 1 << 20, version: 1, grant: .only([1]), through: .max)
            #expect(feed.changeSets.count == 1)
            #expect(mine.changes(after: start)?.bytes == Int64(feed.changeSets[0].json.count + 1))
            #expect(mine.changes(after: start)?.revisions == 2)
            #expect(every.changes(after: start)!.bytes > mine.changes(after: start)!.bytes)
        }
    }

    @Test(arguments: StoreBackend.tested) func aTeamReadsItsRowsFromEveryEndpointAndNoCacheMayShareThem(
        backend: StoreBackend
    ) async throws {
        try await withClubsServer(backend) { client, store in
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
            try await store.commit(Fixtures.clubsRetitle(201, team: 2, "edited"))
            try await store.commit(Fixtures.clubsRetitle(101, team: 1, "edited"))
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

    @Test(arguments: StoreBackend.tested) func aTeamWritesItsRowsAloneAndATokenWithoutTheClaimIsRefused(
        backend: StoreBackend
    ) async throws {
        try await withClubsServer(backend) { client, store in
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

    @Test(arguments: StoreBackend.tested) func anAddressNamingItsTeamsIsTheSameForEveryReaderAndCachesMayShareIt(
        backend: StoreBackend
    ) async throws {
        try await withClubsServer(backend) { client, store in
            let one = try await TestIdentityProvider.teamToken([1])
            let both = try await TestIdentityProvider.teamToken([1, 2])
            func get(_ uri: String, _ token: String?) async throws -> TestResponse {
                try await client.execute(uri: uri, method: .get, headers: headers(token: token))
            }
            let page = try await get("/v1/snapshot/events?notBefore=0&scopes=1", one)
            #expect(page.headers[.cacheControl]?.hasPrefix("public") == true)
            #expect(
                try SnapshotPage(json: JSONParser.parse(Array(buffer: page.body))).rows.map { $0[0] } == [
                    101, 102, 103,
                ])
            let staticToken = try await get("/v1/snapshot/events?notBefore=0&scopes=1", TestTokens.read)
            #expect(staticToken.body == page.body, "the answer depends on the address alone")
            let pair = try await get("/v1/snapshot/events?notBefore=0&scopes=1,2", both)
            #expect(try SnapshotPage(json: JSONParser.parse(Array(buffer: pair.body))).rows.count == 6)
            // Another team's value, named alone or beside its own: refused from the token alone.
            for uri in [
                "/v1/snapshot/events?scopes=2", "/v1/snapshot/events?scopes=1,2",
                "/v1/changes?after=0&schemaVersion=1&scopes=3",
            ] {
                let refused = try await get(uri, one)
                #expect(refused.status == .forbidden && errorCode(refused) == "forbidden", "\(uri)")
                #expect(String(buffer: refused.body).contains("does not grant team"), "\(uri)")
                #expect(!String(buffer: refused.body).contains("10"), "no row of another team in \(uri)")
            }
            // One spelling per list, so that every reader of the same values asks for one address.
            for uri in [
                "/v1/snapshot/events?scopes=2,1", "/v1/snapshot/events?scopes=01", "/v1/snapshot/events?scopes=1,1",
                "/v1/snapshot/events?scopes=1&scopes=2", "/v1/snapshot/events?scopes=x",
            ] {
                let refused = try await get(uri, both)
                #expect(refused.status == .badRequest && errorCode(refused) == "invalid_parameter", "\(uri)")
            }
            let start = try await store.revisions().revision
            try await store.commit(Fixtures.clubsRetitle(201, team: 2, "edited"))
            try await store.commit(Fixtures.clubsRetitle(101, team: 1, "edited"))
            let changes = try await get("/v1/changes?after=\(start)&schemaVersion=1&scopes=1", one)
            #expect(changes.headers[.cacheControl]?.hasPrefix("public") == true)
            let feed = try SyncResponse(json: JSONParser.parse(Array(buffer: changes.body)))
            #expect(feed.changeSets.map(\.revision) == [start + 2] && feed.scopes == [1])
            #expect(
                try await get("/v1/changes?after=\(start)&schemaVersion=1&scopes=1", TestTokens.read).body
                    == changes.body)
        }
    }

    /// Seeds registered per team (`seed-build --every-scope --register`): a reader is offered the
    /// seeds of teams it reads and no other, a static token every seed.
    @Test(arguments: StoreBackend.tested) func aReaderIsOfferedTheSeedsOfItsTeamsAlone(backend: StoreBackend)
        async throws
    {
        try await withClubsServer(backend) { client, store in
            let revision = try await store.revisions().revision
            func sha(_ digit: Character) -> String { String(repeating: digit, count: 64) }
            let registered: [(String, [JSONValue]?)] = [("a", nil), ("b", [1]), ("c", [2]), ("d", [2, 1])]
            for (digit, scopes) in registered {
                let body = try JSONEncoder().encode(
                    SeedRegistration(
                        sha256: sha(Character(digit)), revision: revision, schemaVersion: 1, scopes: scopes))
                let answer = try await client.execute(
                    uri: "/v1/admin/seeds", method: .post, headers: headers(token: TestTokens.admin),
                    body: ByteBuffer(bytes: body))
                #expect(answer.status == .ok, "\(String(buffer: answer.body))")
            }
            func offered(_ token: String) async throws -> [String] {
                let answer = try await client.execute(uri: "/v1/seeds", method: .get, headers: headers(token: token))
                return try decode(SeedList.self, answer).seeds.map { String($0.sha256.prefix(1)) }
            }
            #expect(try await offered(try await TestIdentityProvider.teamToken([1])) == ["b"])
            #expect(try await offered(try await TestIdentityProvider.teamToken([2, 1])) == ["b", "c", "d"])
            #expect(try await offered(try await TestIdentityProvider.teamToken([3])) == [])
            #expect(try await offered(TestTokens.read) == ["a", "b", "c", "d"])
            #expect(try await store.registeredSeeds().last?.scopes == [1, 2], "kept sorted")
            let refused: [SeedRegistration] = [
                SeedRegistration(sha256: sha("b"), revision: revision, schemaVersion: 1, scopes: [2]),
                SeedRegistration(sha256: sha("e"), revision: revision, schemaVersion: 1, scopes: ["1"]),
                SeedRegistration(sha256: sha("e"), revision: revision, schemaVersion: 1, scopes: [.null]),
            ]
            for registration in refused {
                await #expect { _ = try await store.register(registration) } throws: {
                    ($0 as? SyncStoreError)?.code == .invalidRegistration
                }
            }
        }
    }

    /// `GET /v1/auth` as a cache asks it (nginx's `auth_request` with `X-Original-URI`): a reader of
    /// some teams may read an address that names its teams, or a shared type's pages; nothing that
    /// a kept answer of every team may sit at, however it is spelled.
    @Test func theAuthCheckLetsAReaderOfSomeTeamsReadTheAddressesOfItsTeamsAlone() async throws {
        try await withClubsServer { client, _ in
            let one = try await TestIdentityProvider.teamToken([1])
            func check(_ address: String?, _ token: String?) async throws -> HTTPResponse.Status {
                var extra: HTTPFields = [:]
                if let address { extra[HTTPField.Name("X-Original-URI")!] = address }
                return try await client.execute(uri: "/v1/auth", method: .get, headers: headers(token: token, extra))
                    .status
            }
            let allowed = [
                "/v1/changes?after=0&schemaVersion=1&scopes=1", "/v1/snapshot/events?limit=5&scopes=1",
                "/v1/snapshot/venues?limit=5", "/v1/auth",
            ]
            for address in allowed { #expect(try await check(address, one) == .noContent, "\(address)") }
            #expect(try await check(nil, one) == .noContent, "a token check of its own")
            let refused = [
                "/v1/changes?after=0&schemaVersion=1", "/v1/changes?after=0&schemaVersion=1&scopes=2",
                "/v1/snapshot/events?limit=5", "/v1/snapshot/%65vents?limit=5", "/v1/%63hanges?after=0",
                "/v1//changes?after=0", "/v1/snapshot/venues/../events", "/v1/snapshot/nothing", "/v1/seeds",
            ]
            for address in refused { #expect(try await check(address, one) == .forbidden, "\(address)") }
            #expect(try await check("/v1/changes?after=0&schemaVersion=1", TestTokens.read) == .noContent)
            #expect(try await check("/v1/changes?after=0&schemaVersion=1&scopes=3", TestTokens.read) == .noContent)
            #expect(try await check("/v1/changes?after=0&scopes=2,1", TestTokens.read) == .badRequest)
            #expect(try await check("/v1/changes?after=0", nil) == .unauthorized)
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
}
