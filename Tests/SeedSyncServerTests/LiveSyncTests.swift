import Foundation
import SeedSyncClient
import SeedSyncModel
import SeedSyncPostgres
import SeedSyncSQLiteStore
import SeedSyncServer
import SeedSyncStore
import SeedSyncTesting
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Live sync (`"wait"` in `POST /v1/sync`) on a real server on loopback, both stores: a held
/// request answered by the next commit, whoever makes it; the server's cap on the wait; the bound
/// on held requests; pushes never held; many clients woken by one commit.
@Suite struct LiveSyncTests {
    @Test(arguments: StoreBackend.tested)
    func aHeldRequestIsAnsweredByTheNextCommit(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let first = try await store.commit(Fixtures.catalogCreation())
            try await withLiveServer(store) { url in
                let client = Self.client(url)
                async let answer = client.sync(from: first, wait: 55)
                try await Self.waitUntilHeld(1, on: url)
                let second = try await store.commit(Fixtures.catalogCreation(author: "tolkien", book: 2))
                // Caught up when it was sent: only holding it can bring the new change set.
                #expect(try await answer.changeSets.map(\.revision) == [second])
            }
        }
    }

    /// Another process's writer: a second store on the SQLite file (seen by the watch's read), a
    /// psql-like session on PostgreSQL (seen through `NOTIFY`).
    @Test(arguments: StoreBackend.tested)
    func aCommitByAnotherWriterWakesHeldRequests(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let first = try await store.commit(Fixtures.catalogCreation())
            try await withLiveServer(store) { url in
                async let answer = Self.client(url).sync(from: first, wait: 55)
                try await Self.waitUntilHeld(1, on: url)
                try await Self.commitAsAnotherWriter(to: store)
                let changeSets = try await answer.changeSets
                #expect(changeSets.map(\.revision) == [first + 1])
                #expect(changeSets.first?.changes.map(\.type) == ["authors"])
            }
        }
    }

    @Test(arguments: StoreBackend.tested)
    func oneCommitWakesEveryWaitingClient(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let first = try await store.commit(Fixtures.catalogCreation())
            try await withLiveServer(store) { url in
                try await withThrowingTaskGroup(of: [Int64].self) { group in
                    for _ in 0..<100 {
                        // A client each: one URLSession opens a few connections to a host at most.
                        group.addTask {
                            try await Self.client(url).sync(from: first, wait: 55).changeSets.compactMap(\.revision)
                        }
                    }
                    try await Self.waitUntilHeld(100, on: url)
                    let second = try await store.commit(Fixtures.catalogCreation(author: "b", book: 2))
                    var answered = 0
                    for try await revisions in group {
                        #expect(revisions == [second])
                        answered += 1
                    }
                    #expect(answered == 100)
                }
            }
        }
    }

    @Test func aWaitEndsAtTheServersCapWithNoChangeSet() async throws {
        try await StoreBackend.sqlite.withStore { store in
            let first = try await store.commit(Fixtures.catalogCreation())
            try await withLiveServer(store, configure: { $0.maxWait = .seconds(1) }) { url in
                let start = ContinuousClock.now
                let answer = try await Self.client(url).sync(from: first, wait: 55)
                let held = ContinuousClock.now - start
                #expect(answer.changeSets.isEmpty)
                #expect(answer.maxRevision == first)
                #expect(!answer.hasMore)
                #expect(held >= .milliseconds(900), "held until the cap")
                #expect(held < .seconds(20), "not for the 55 s asked")
                // No wait, or a wait of 0: today's answer, at once.
                #expect(try await Self.client(url).sync(from: first).changeSets.isEmpty)
                #expect(try await Self.client(url).sync(from: first, wait: 0).changeSets.isEmpty)
            }
        }
    }

    /// The client's request timeout grows by the wait it asks for: a held request outlasting the
    /// plain timeout is not given up on. (The timeout leaves room for a test process whose server
    /// is slowed by the rest of the suite: 10 s, held 12.)
    @Test func aHeldRequestOutlastsTheClientsRequestTimeout() async throws {
        try await StoreBackend.sqlite.withStore { store in
            let first = try await store.commit(Fixtures.catalogCreation())
            try await withLiveServer(store, configure: { $0.maxWait = .seconds(12) }) { url in
                let client = SyncClient(
                    configuration: .init(serverURL: url, token: liveServerToken, requestTimeout: 10, retry: .none))
                let start = ContinuousClock.now
                let answer = try await client.sync(from: first, wait: 12)
                #expect(answer.changeSets.isEmpty)
                #expect(ContinuousClock.now - start >= .milliseconds(11_900), "held past the 10 s timeout")
            }
        }
    }

    /// A revision committed between a client's catch-up and its `"wait"` request: the request is
    /// answered at once with it (a client timing out after 10 s would fail the test, where the
    /// wait asked for 55).
    @Test(arguments: StoreBackend.tested)
    func aRevisionBetweenTheCatchUpAndTheWaitIsAnsweredAtOnce(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let first = try await store.commit(Fixtures.catalogCreation())
            try await withLiveServer(store) { url in
                let client = Self.client(url)
                let caughtUp = try await client.sync(from: 0)
                #expect(caughtUp.maxRevision == first && !caughtUp.hasMore)
                let second = try await store.commit(Fixtures.catalogCreation(author: "b", book: 2))
                let answer = try await client.sync(from: caughtUp.maxRevision, wait: 55)
                #expect(answer.changeSets.map(\.revision) == [second])
                // And one that arrives after a commit another writer made, seen only by the watch.
                try await Self.commitAsAnotherWriter(to: store)
                #expect(try await client.sync(from: second, wait: 55).changeSets.map(\.revision) == [second + 1])
            }
        }
    }

    /// Clients that reset their held connections at once: each slot is freed when its connection
    /// closes, long before its wait would end, so a crowd of abandoned waits cannot fill the
    /// server's capacity.
    @Test func abandonedHeldRequestsFreeTheirSlots() async throws {
        try await StoreBackend.sqlite.withStore { store in
            let first = try await store.commit(Fixtures.catalogCreation())
            try await withLiveServer(
                store,
                configure: {
                    $0.maxWaitingRequests = 20
                    $0.maxWait = .seconds(600)
                }
            ) { url in
                let body = #"{"maxRevision": \#(first), "wait": 600}"#
                let request =
                    "POST /v1/sync HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer \(liveServerToken)\r\n"
                    + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
                let connections = try (0..<20).map { _ in try RawConnection(port: url.port!) }
                for connection in connections { #expect(connection.send(request)) }
                try await Self.waitUntilHeld(20, on: url)
                for connection in connections { connection.reset() }
                try await Self.waitUntilHeld(0, on: url)
                // A client's wait is held again: the slots were freed.
                async let held = Self.client(url).sync(from: first, wait: 55)
                try await Self.waitUntilHeld(1, on: url)
                let second = try await store.commit(Fixtures.catalogCreation(author: "b", book: 2))
                #expect(try await held.changeSets.map(\.revision) == [second])
            }
        }
    }

    @Test func aClientBehindIsAnsweredAtOnceAndAPushIsNeverHeld() async throws {
        try await StoreBackend.sqlite.withStore { store in
            let first = try await store.commit(Fixtures.catalogCreation())
            try await withLiveServer(store) { url in
                let start = ContinuousClock.now
                #expect(try await Self.client(url).sync(from: 0, wait: 50).changeSets.map(\.revision) == [first])
                let pushed = PushedChangeSet(
                    id: "live-push",
                    changeSet: ChangeSet(changes: [
                        TypeChanges(type: "authors", create: [.string("new")], attributes: ["new": ["name": "New"]])
                    ]))
                let answer = try await Self.client(url, token: liveServerWriteToken)
                    .sync(from: first, pushing: [pushed], wait: 50)
                #expect(answer.results.map(\.id) == ["live-push"])
                #expect(answer.changeSets.count == 1)
                #expect(ContinuousClock.now - start < .seconds(30), "neither request was held for its 50 s")
            }
        }
    }

    @Test(arguments: StoreBackend.tested)
    func requestsBeyondTheBoundAreRefusedWithRetryAfter(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let first = try await store.commit(Fixtures.catalogCreation())
            try await withLiveServer(store, configure: { $0.maxWaitingRequests = 2 }) { url in
                let client = Self.client(url)
                async let held1 = client.sync(from: first, wait: 55)
                async let held2 = client.sync(from: first, wait: 55)
                try await Self.waitUntilHeld(2, on: url)
                let (status, headers, body) = try await Self.post(
                    url, #"{"maxRevision": \#(first), "wait": 55}"#)
                #expect(status == 503)
                #expect(headers["Retry-After"] == "2")
                #expect(body.contains(#""code":"too_many_waiting""#), "\(body)")
                #expect(body.contains("2 waiting sync requests"), "\(body)")
                // Without a wait, the same client is served as ever.
                #expect(try await Self.post(url, #"{"maxRevision": \#(first)}"#).status == 200)
                let second = try await store.commit(Fixtures.catalogCreation(author: "b", book: 2))
                #expect(try await held1.changeSets.map(\.revision) == [second])
                #expect(try await held2.changeSets.map(\.revision) == [second])
                try await Self.waitUntilHeld(0, on: url)
            }
        }
    }

    @Test func aNegativeWaitIsRefused() async throws {
        try await StoreBackend.sqlite.withStore { store in
            try await withLiveServer(store) { url in
                let (status, _, body) = try await Self.post(url, #"{"maxRevision": 0, "wait": -1}"#)
                #expect(status == 400)
                #expect(body.contains("wait must be 0 or more seconds"), "\(body)")
                let (fraction, _, _) = try await Self.post(url, #"{"maxRevision": 0, "wait": 1.5}"#)
                #expect(fraction == 400)
                let (huge, _, message) = try await Self.post(url, #"{"maxRevision": 0, "wait": 99999999999999999999}"#)
                #expect(
                    huge == 400 && message.contains("wait: out of range: integers here fit in 64 bits"), "\(message)")
            }
        }
    }

    /// `seed-server serve` stopped with SIGTERM answers the request it holds at once (with no
    /// change set), then exits.
    @Test func shutdownAnswersHeldRequestsAtOnce() async throws {
        try await withTemporaryDirectory { directory in
            let database = directory.appendingPathComponent("server.sqlite").path
            _ = try await Executables.run(
                "seed-server", ["init", "--database", database, "--demo", "--events", "10", "--locations", "2"])
            let server = try Executables.start(
                "seed-server", ["serve", "--database", database, "--port", "0", "--log-level", "warning"],
                environment: ["SEED_SERVER_TOKENS": liveServerToken, "SEED_SERVER_ADMIN_TOKENS": liveServerAdminToken])
            defer { if server.isRunning { server.terminate() } }
            let url = URL(string: try #require(await Executables.listeningAddress(of: server)))!
            async let answer = Self.client(url).sync(from: 1, wait: 55)
            try await Self.waitUntilHeld(1, on: url)
            let stop = ContinuousClock.now
            server.terminate()
            let response = try await answer
            #expect(response.changeSets.isEmpty)
            #expect(response.maxRevision == 1)
            #expect(ContinuousClock.now - stop < .seconds(20), "answered at shutdown, not after its 55 s")
            try await server.waitUntilExit()
            #expect(server.terminationStatus == 0)
        }
    }

    // MARK: - Support

    static func client(_ url: URL, token: String = liveServerToken) -> SyncClient {
        SyncClient(configuration: .init(serverURL: url, token: token, requestTimeout: 10, retry: .none))
    }

    /// Waits (60 s at most: the whole suite shares two cores) until the server's `/metrics` shows `count` held requests.
    static func waitUntilHeld(_ count: Int, on url: URL, adminToken: String = liveServerAdminToken) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        var request = URLRequest(url: url.appendingPathComponent("metrics"))
        request.setValue("Bearer \(adminToken)", forHTTPHeaderField: "Authorization")
        while ContinuousClock.now < deadline {
            let (data, _) = try await TestHTTP.data(for: request)
            let held = String(decoding: data, as: UTF8.self).split(separator: "\n").first {
                $0.hasPrefix("seedsync_waiting_requests ")
            }
            if let held, Double(held.split(separator: " ")[1]) == Double(count) { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TestSetupError("the server did not hold \(count) requests within 60 s")
    }

    /// `POST /v1/sync` with `json`: the status, headers and body.
    static func post(_ url: URL, _ json: String) async throws -> (status: Int, headers: [String: String], body: String)
    {
        var request = URLRequest(url: url.appendingPathComponent("v1/sync"), timeoutInterval: 60)
        request.httpMethod = "POST"
        request.httpBody = Data(json.utf8)
        request.setValue("Bearer \(liveServerToken)", forHTTPHeaderField: "Authorization")
        let (data, response) = try await TestHTTP.data(for: request)
        let http = response
        let headers = http.allHeaderFields.reduce(into: [String: String]()) { fields, field in
            fields["\(field.key)"] = "\(field.value)"
        }
        return (http.statusCode, headers, String(decoding: data, as: UTF8.self))
    }

    /// Commits an author the way a writer outside this server would.
    static func commitAsAnotherWriter(to store: any SyncStore) async throws {
        if let sqlite = store as? SQLiteSyncStore {
            let other = try SQLiteSyncStore(path: sqlite.path)
            defer { try? other.close() }
            try await other.commit(
                ChangeSet(changes: [
                    TypeChanges(type: "authors", create: [.string("other")], attributes: ["other": ["name": "Other"]])
                ]))
        } else if let postgres = store as? PostgresSyncStore {
            try await TestPostgres.runScript(
                "INSERT INTO authors (code, name) VALUES ('other', 'Other')", on: postgres.location)
        }
    }
}
