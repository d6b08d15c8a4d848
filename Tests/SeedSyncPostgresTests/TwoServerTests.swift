import Foundation
import NIOConcurrencyHelpers
import SeedSyncClient
import SeedSyncModel
import SeedSyncPostgres
import SeedSyncTesting
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Two `seed-server` processes on one PostgreSQL, with admin writers through both, psql writers
/// beside them and clients syncing through both: one gap-free log that replays to the tables, and
/// every client ends equal to them.
@Suite(.needsPostgres, .tags(.postgres)) struct TwoServerTests {
    static let readToken = "two-server-read", adminToken = "two-server-admin"

    @Test func twoServersAndDirectWritersShareOneHistory() async throws {
        try await withTeamDatabase { location in
            try await PostgresSyncStore.attach(at: location, schema: teamSchema)
            let (servers, urls) = try await Self.startServers(
                on: location, tokens: ["SEED_SERVER_ADMIN_TOKENS": Self.adminToken])
            defer { for server in servers { server.terminate() } }
            let start: [String: [[JSONValue]]] = [
                "venues": [["hall", "Main Hall", "2001-02-03T04:05:06.5Z", "AQL/", 1]],
                "shows": [[1, "Opening", "hall", 12.5, 0.1, false, "2026-01-01T19:00:00Z", 300, 1]],
            ]
            let writing = Countdown(4)
            let clients = try await withThrowingTaskGroup(of: [String: [[JSONValue]]]?.self) { group in
                for (index, url) in urls.enumerated() {
                    group.addTask {
                        defer { writing.decrement() }
                        try await Self.writeThroughAdmin(url, writer: index, changeSets: 15)
                        return nil
                    }
                    group.addTask {
                        defer { writing.decrement() }
                        try await ConcurrentWriterTests.writeThroughSQL(
                            writer: 10 + index, transactions: 15, location: location)
                        return nil
                    }
                    group.addTask { try await Self.follow(url, from: start, while: { writing.remaining > 0 }) }
                }
                var states: [[String: [[JSONValue]]]] = []
                for try await state in group { if let state { states.append(state) } }
                return states
            }
            try await TestPostgres.withStore(at: location) { store in
                let info = try await store.schemaInfo()
                #expect(info.revision == 1 + 2 * 15 + 2 * 12)
                let sets = try await changeSets(of: store, after: 1)
                #expect(sets.map(\.revision) == Array(2...info.revision))
                let tables = try await Fixtures.contents(of: store)
                #expect(replay(sets, onto: start, schema: teamSchema) == tables)
                #expect(clients.count == 2)
                for client in clients { #expect(client == tables) }
            }
        }
    }

    /// Live sync across processes: a request held by one server is answered by a commit through
    /// the other (its `NOTIFY`), and requests held by both by a write the psql program makes.
    @Test func heldRequestsWakeForCommitsOfAnotherServerAndOfPsql() async throws {
        try await withTeamDatabase { location in
            try await PostgresSyncStore.attach(at: location, schema: teamSchema)
            let (servers, urls) = try await Self.startServers(
                on: location, tokens: ["SEED_SERVER_ADMIN_TOKENS": Self.adminToken])
            defer { for server in servers { server.terminate() } }
            let clients = urls.map { url in
                SyncClient(
                    configuration: .init(serverURL: url, token: Self.readToken, requestTimeout: 10, retry: .none))
            }
            async let throughOther = clients[0].sync(from: 1, wait: 55)
            try await Self.waitUntilHeld(on: urls[0])
            var committed = ContinuousClock.now
            try await Self.writeThroughAdmin(urls[1], writer: 1, changeSets: 1)
            #expect(try await throughOther.changeSets.map(\.revision) == [2])
            // Sooner than the fallback read (every 5 s) could: the notification woke it.
            #expect(ContinuousClock.now - committed < .milliseconds(4_000))

            async let first = clients[0].sync(from: 2, wait: 55)
            async let second = clients[1].sync(from: 2, wait: 55)
            for url in urls { try await Self.waitUntilHeld(on: url) }
            committed = ContinuousClock.now
            let psql = try await Executables.run(
                "/usr/bin/env",
                [
                    "psql", location.description, "-v", "ON_ERROR_STOP=1", "-q", "-c",
                    "INSERT INTO venues VALUES ('psql', 'From psql')",
                ])
            #expect(psql.status == 0, "\(psql.stderr)")
            for answer in [try await first, try await second] {
                #expect(answer.changeSets.map(\.revision) == [3])
                #expect(answer.changeSets.first?.changes.first?.create == ["psql"])
            }
            #expect(ContinuousClock.now - committed < .milliseconds(4_000))
        }
    }

    /// Waits (60 s at most) until the server at `url` holds a sync request.
    static func waitUntilHeld(on url: URL) async throws {
        var request = URLRequest(url: url.appendingPathComponent("metrics"))
        request.setValue("Bearer \(adminToken)", forHTTPHeaderField: "Authorization")
        for _ in 0..<3_000 {
            let (data, _) = try await TestHTTP.data(for: request)
            let text = String(decoding: data, as: UTF8.self)
            if text.split(separator: "\n").contains(where: { $0.hasPrefix("seedsync_waiting_requests 1") }) { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TestSetupError("\(url) held no sync request within 60 s")
    }

    @Test func aPushSentThroughBothServersAtOnceIsAppliedOnce() async throws {
        try await withTeamDatabase { location in
            try await PostgresSyncStore.attach(at: location, schema: teamSchema)
            let (servers, urls) = try await Self.startServers(
                on: location, tokens: ["SEED_SERVER_WRITE_TOKENS": Self.writeToken])
            defer { for server in servers { server.terminate() } }
            let body = Data(
                #"""
                {"maxRevision": 1, "changeSets": [{"id": "sent-twice", "types": ["venues", "shows"],
                 "venues": {"create": ["pier"], "attributes": {"pier": {"name": "Pier"}}},
                 "shows": {"create": [-1], "attributes": {"-1": {"title": "New", "venue": "pier", "price": 3, "sold_out": false, "starts_at": "2026-03-03T03:03:03Z"}}}}]}
                """#.utf8)
            let answers = try await withThrowingTaskGroup(of: SyncResponse.self) { group in
                for attempt in 0..<8 {
                    group.addTask {
                        var request = URLRequest(url: urls[attempt % 2].appendingPathComponent("v1/sync"))
                        request.httpMethod = "POST"
                        request.httpBody = body
                        request.setValue("Bearer \(Self.writeToken)", forHTTPHeaderField: "Authorization")
                        let (data, _) = try await TestHTTP.data(for: request)
                        return try JSONDecoder().decode(SyncResponse.self, from: data)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(Set(answers.map(\.results)).count == 1, "every server answers with the first result")
            #expect(answers.first?.results.first?.status == .applied(revision: 2, keys: ["shows": ["-1": 2]]))
            let (revision, shows) = try await TestPostgres.withStore(at: location) { store in
                (try await store.schemaInfo().revision, try await store.keys(of: "shows"))
            }
            #expect(revision == 2 && shows == [1, 2])
        }
    }

    static let writeToken = "two-server-write"

    /// Two `seed-server serve` processes on `location`, with the read token and `tokens`, and
    /// their addresses; the caller terminates them.
    static func startServers(on location: PostgresLocation, tokens: [String: String]) async throws -> (
        [ChildProcess], [URL]
    ) {
        let environment = tokens.merging(["SEED_SERVER_TOKENS": readToken]) { given, _ in given }
        let servers = try (0..<2).map { _ in
            try Executables.start(
                "seed-server", ["serve", "--database", location.description, "--port", "0", "--log-level", "warning"],
                environment: environment)
        }
        do {
            var urls: [URL] = []
            for server in servers {
                guard let address = await Executables.listeningAddress(of: server) else {
                    throw TestSetupError("seed-server did not start")
                }
                urls.append(URL(string: address)!)
            }
            return (servers, urls)
        } catch {
            for server in servers { server.terminate() }
            throw error
        }
    }

    /// Creates a venue and a show in each change set, through `/v1/admin/changes`.
    static func writeThroughAdmin(_ url: URL, writer: Int, changeSets: Int) async throws {
        for index in 0..<changeSets {
            let code = "a\(writer)-\(index)"
            let id = 50_000 + writer * 100 + index
            let body = """
                {"types": ["venues", "shows"], "venues": {"create": ["\(code)"], "attributes": {"\(code)": {"name": "Admin venue"}}},
                 "shows": {"create": [\(id)], "attributes": {"\(id)": {"title": "Admin show", "venue": "\(code)", "price": 2,
                 "sold_out": false, "starts_at": "2026-02-02T02:02:02Z"}}}}
                """
            var request = URLRequest(url: url.appendingPathComponent("v1/admin/changes"))
            request.httpMethod = "POST"
            request.httpBody = Data(body.utf8)
            request.setValue("Bearer \(adminToken)", forHTTPHeaderField: "Authorization")
            let (_, response) = try await TestHTTP.data(for: request)
            #expect(response.statusCode == 200)
        }
    }

    /// A client syncing through `url` while `writing()` holds, then once more to the end: the rows
    /// it holds.
    static func follow(_ url: URL, from start: [String: [[JSONValue]]], while writing: @Sendable () -> Bool)
        async throws -> [String: [[JSONValue]]]
    {
        let client = SyncClient(
            configuration: .init(serverURL: url, token: readToken, requestTimeout: 10, retry: .none))
        var state = start
        var revision: Int64 = 1
        var last = false
        while true {
            last = !writing()
            let answer = try await client.sync(from: revision, limit: 5)
            for changeSet in answer.changeSets {
                #expect(changeSet.revision == revision + 1, "no revision skipped, none twice")
                revision = changeSet.revision ?? revision
            }
            state = replay(answer.changeSets, onto: state, schema: teamSchema)
            if last && !answer.hasMore { return state }
            if answer.changeSets.isEmpty { try await Task.sleep(for: .milliseconds(20)) }
        }
    }
}

/// How many writers are still writing.
final class Countdown: Sendable {
    private let count: NIOLockedValueBox<Int>
    init(_ count: Int) { self.count = NIOLockedValueBox(count) }
    func decrement() { count.withLockedValue { $0 -= 1 } }
    var remaining: Int { count.withLockedValue { $0 } }
}
