import Foundation
import Logging
import SeedSyncClient
import SeedSyncDemo
import SeedSyncImport
import SeedSyncModel
import SeedSyncSeed
import SeedSyncServer
import SeedSyncStore
import SeedSyncTesting
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// ``SyncEngine`` against a real server on loopback: a server change reaches the app's database
/// while the engine waits (no polling), the server going away and coming back, pause and resume,
/// stop.
@Suite(.timeLimit(.minutes(3))) struct SyncEngineTests {
    @Test func aServerChangeReachesTheDatabaseWhileTheEngineWaits() async throws {
        try await withImportFixture { fixture in
            let engine = try await SyncEngineTests.waitingEngine(fixture.importer().configuration)
            #expect(try revision(of: fixture.database) == (try await fixture.serverRevision()))
            let committed = ContinuousClock.now
            try await fixture.mutate(1, seed: 99)
            let target = try await fixture.serverRevision()
            try await Self.eventually("the new revision") { try revision(of: fixture.database) == target }
            #expect(ContinuousClock.now - committed < .seconds(30), "woken by the commit, not by the 55 s wait's end")
            #expect(try await fixture.serverContents() == contents(ofSeed: fixture.database))
            await engine.stop()
            #expect("\(await engine.currentState)" == "stopped")
        }
    }

    /// Tokens of five seconds from the app's identity provider: the engine goes on past each expiry
    /// without a failure reaching the app, and a server change still reaches the database. (Each run
    /// asks the provider, so this holds even where a client's renewal after a 401 is not needed: the
    /// renewal itself is `TokenProviderTests`' subject, where breaking it fails three tests.)
    @Test func theEngineOutlivesShortLivedTokens() async throws {
        let provider = await TestIdentityProvider()
        let jwt = JWTConfiguration(keys: .secret(TestIdentityProvider.secret), leeway: .zero)
        try await withImportFixture(maxWait: .seconds(1), jwt: jwt) { fixture in
            var configuration = fixture.importer().configuration
            configuration.server.tokens = TokenProvider { _ in
                try await provider.token(claims: TestIdentityProvider.claims(expiringIn: 5))
            }
            let engine = try await SyncEngineTests.waitingEngine(configuration)
            let failures = LockedValue([String]())
            let watch = Task {
                for await state in engine.states() {
                    if case .failed(let error) = state { failures.set(failures.get() + ["\(error)"]) }
                }
            }
            try await Task.sleep(for: .seconds(6))
            try await fixture.mutate(1, seed: 98)
            let target = try await fixture.serverRevision()
            try await Self.eventually("the new revision") { try revision(of: fixture.database) == target }
            #expect(failures.get().isEmpty, "an expiry reached the app: \(failures.get())")
            #expect(try await fixture.serverContents() == contents(ofSeed: fixture.database))
            await engine.stop()
            watch.cancel()
        }
    }

    /// Offline while nothing listens at the server's address (the seed installs anyway), syncing
    /// when a server comes up there, offline again when it goes, back when it returns; every
    /// change set applied once, in order.
    @Test func theEngineSurvivesTheServerGoingAwayAndComingBack() async throws {
        try await withImportFixture { fixture in
            let port = try freePort()
            var configuration = fixture.importer().configuration
            configuration.server.serverURL = URL(string: "http://127.0.0.1:\(port)")!
            let applied = Locked<[Int64]>([])
            let engine = SyncEngine(
                configuration: configuration,
                options: .init(wait: 50, backoff: RetryPolicy(maxAttempts: 1, baseDelay: 0.2, maxDelay: 0.5))
            ) { event in
                if case .applied(let changeSet) = event { applied.update { $0.append(changeSet.revision) } }
            }
            await engine.start()
            try await Self.until(engine, "offline") { if case .offline = $0 { true } else { false } }
            #expect(try revision(of: fixture.database) == fixture.seedRevision, "installed offline")
            for round in 0..<2 {
                try await serving(fixture.served.store, on: port) {
                    try await Self.until(engine, "waiting") { if case .waiting = $0 { true } else { false } }
                    #expect(try revision(of: fixture.database) == (try await fixture.serverRevision()))
                    try await fixture.mutate(2, seed: 40 + UInt64(round))
                    let target = try await fixture.serverRevision()
                    try await Self.eventually("revision \(target)") { try revision(of: fixture.database) == target }
                }
                try await Self.until(engine, "offline") { if case .offline = $0 { true } else { false } }
            }
            await engine.stop()
            let revisions = applied.value
            #expect(revisions == Array((fixture.seedRevision + 1)...(revisions.last ?? 0)), "each once, in order")
            #expect(revisions.last == (try await fixture.serverRevision()))
            #expect(try await fixture.serverContents() == contents(ofSeed: fixture.database))
        }
    }

    @Test func syncNowEndsABackoffAtOnce() async throws {
        try await withImportFixture { fixture in
            var configuration = fixture.importer().configuration
            configuration.server.serverURL = URL(string: "http://127.0.0.1:\(try freePort())")!
            let engine = SyncEngine(
                configuration: configuration,
                options: .init(backoff: RetryPolicy(maxAttempts: 1, baseDelay: 60, maxDelay: 60)))
            await engine.start()
            try await Self.until(engine, "offline") { if case .offline = $0 { true } else { false } }
            let states = engine.states()
            await engine.syncNow()
            var seen: [String] = []
            for await state in states {
                seen.append("\(state)")
                if case .syncing = state { break }
            }
            #expect(seen.contains("syncing"), "a new attempt, not the rest of the 60 s backoff")
            await engine.stop()
        }
    }

    @Test func aPausedEngineAppliesNothingUntilResumed() async throws {
        try await withImportFixture { fixture in
            let engine = SyncEngine(configuration: fixture.importer().configuration, options: .init(wait: 50))
            await engine.start()
            try await Self.until(engine, "waiting") { if case .waiting = $0 { true } else { false } }
            await engine.pause()
            try await Self.until(engine, "paused") { if case .paused = $0 { true } else { false } }
            let before = try revision(of: fixture.database)
            try await fixture.mutate(2, seed: 77)
            try await Task.sleep(for: .seconds(1))
            #expect(try revision(of: fixture.database) == before, "nothing applied while paused")
            await engine.resume()
            let target = try await fixture.serverRevision()
            try await Self.eventually("revision \(target)") { try revision(of: fixture.database) == target }
            await engine.stop()
        }
    }

    /// Stopped while it installs and catches up: `stop()` returns with the database closed and
    /// the lock released, and the next run goes on from where it stopped.
    @Test func stopDuringARunLeavesADatabaseTheNextRunContinues() async throws {
        try await withImportFixture(changesAfter: 200) { fixture in
            let engine = SyncEngine(configuration: fixture.importer(syncLimit: 1).configuration)
            await engine.start()
            try await Self.until(engine, "syncing") { if case .syncing = $0 { true } else { false } }
            await engine.stop()
            let states = engine.states()
            var last = ""
            for await state in states { last = "\(state)" }
            #expect(last == "stopped", "the states end with stopped")
            let report = try await fixture.importer(lockTimeout: 0).run()
            #expect(report.toRevision == (try await fixture.serverRevision()))
            #expect(try await fixture.serverContents() == contents(ofSeed: fixture.database))
        }
    }

    /// A token that may read but not push: the engine keeps the database current and waits, the
    /// local edit kept queued, instead of failing.
    @Test func aTokenThatMayNotPushKeepsTheDatabaseCurrentAndTheEditQueued() async throws {
        try await withImportFixture { fixture in
            let importer = fixture.importer()
            try await importer.run()
            let (key, _) = try await EngineObservationTests.firstEvent(of: fixture)
            try await importer.write { try $0.update("events", key: key, ["title": "Kept"]) }
            let engine = try await Self.waitingEngine(importer.configuration)
            try await fixture.mutate(2, seed: 12)
            let target = try await fixture.serverRevision()
            try await Self.eventually("revision \(target)") { try revision(of: fixture.database) == target }
            #expect(try await importer.pendingChangeSets() == 1)
            await engine.stop()
        }
    }

    /// A server that does not hold requests (`--max-wait 0`, or one older than live sync) answers a
    /// wait at once: the engine asks again every `wait` seconds, not in a loop, and still follows it.
    @Test func aServerThatHoldsNoRequestIsAskedEveryWaitSeconds() async throws {
        try await withImportFixture { fixture in
            try await withLiveServer(fixture.served.store, configure: { $0.maxWait = .zero }) { url in
                var configuration = fixture.importer().configuration
                configuration.server.serverURL = url
                let engine = SyncEngine(configuration: configuration, options: .init(wait: 1))
                await engine.start()
                try await Self.until(engine, "waiting") { if case .waiting = $0 { true } else { false } }
                // Each wait is four live reads answered at once (each with the cursor of the one
                // before), then the rest of the second.
                let before = try await answeredRequests("/v1/changes", on: url)
                try await Task.sleep(for: .seconds(3))
                let asked = try await answeredRequests("/v1/changes", on: url) - before
                #expect((4...16).contains(asked), "\(asked) live reads in 3 s with a wait of 1 s")
                try await fixture.mutate(1, seed: 64)
                let target = try await fixture.serverRevision()
                try await Self.eventually("revision \(target)") { try revision(of: fixture.database) == target }
                await engine.stop()
            }
        }
    }

    @Test func stoppingAnEngineNeverStartedEndsItsStatesAndObservations() async throws {
        let engine = SyncEngine(
            configuration: .init(
                seed: "/nonexistent/seed.sqlite", database: "/nonexistent/app.sqlite",
                server: .init(serverURL: URL(string: "http://127.0.0.1:1")!, token: nil)))
        let changes = await engine.observe(type: "events")
        let states = engine.states()
        await engine.stop()
        var seen: [String] = []
        for await state in states { seen.append("\(state)") }
        #expect(seen.last == "stopped")
        var observed = 0
        for await _ in changes { observed += 1 }
        #expect(observed == 0)
    }

    // MARK: - Support

    /// An engine over `configuration`, started and caught up: holding a live sync request (55 s).
    static func waitingEngine(_ configuration: SeedImporter.Configuration) async throws -> SyncEngine {
        let engine = SyncEngine(configuration: configuration, options: .init(wait: 55))
        await engine.start()
        try await until(engine, "waiting") { if case .waiting = $0 { true } else { false } }
        return engine
    }

    /// Waits (60 s at most: the whole suite shares two cores) until the engine's state matches.
    static func until(_ engine: SyncEngine, _ what: String, _ matches: @escaping (SyncEngine.State) -> Bool)
        async throws
    {
        try await eventually("the engine \(what)") { matches(await engine.currentState) }
    }

    /// Waits (60 s at most) until `condition` holds.
    static func eventually(_ what: String, _ condition: () async throws -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TestSetupError("\(what) did not come within 60 s")
    }
}

/// Serves `store` on `port` (a fixed one: a client configured before the server exists finds it
/// there) for the duration of `body`.
func serving(_ store: any SyncStore, on port: Int, _ body: @escaping @Sendable () async throws -> Void) async throws {
    var logger = Logger(label: "seed-server")
    logger.logLevel = .warning
    let listening = Locked(false)
    let app = try await buildApplication(
        store: store,
        configuration: ServerConfiguration(
            port: port, tokens: TokenSet(readTokens: [liveServerToken], adminTokens: [])),
        logger: logger, onServerRunning: { _ in listening.update { $0 = true } })
    let server = Task { try await app.run() }
    defer { server.cancel() }
    try await SyncEngineTests.eventually("the server on port \(port)") { listening.value }
    do {
        try await body()
    } catch {
        server.cancel()
        _ = await server.result
        throw error
    }
    server.cancel()
    _ = await server.result
}

/// A free TCP port on 127.0.0.1 (free when asked: nothing listens there until a test starts a server).
func freePort() throws -> Int {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(descriptor) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
            bind(descriptor, pointer, length) == 0 && getsockname(descriptor, pointer, &length) == 0
        }
    }
    guard bound else { throw TestSetupError("cannot find a free port") }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// `seed-import sync --live`: a JSON line per change set the server commits while it runs, until
/// SIGTERM, which ends it cleanly.
@Suite(.timeLimit(.minutes(3))) struct LiveCommandTests {
    @Test func printsALinePerCommittedChangeSetUntilSIGTERM() async throws {
        try await withImportFixture { fixture in
            let (process, output, lines) = try Self.startLive(fixture)
            defer { if process.isRunning { process.terminate() } }
            try await Self.waitForLine(of: try await fixture.serverRevision(), in: lines)
            try await fixture.mutate(1, seed: 123)
            let next = try await fixture.serverRevision()
            try await Self.waitForLine(of: next, in: lines)
            process.terminate()
            try await process.waitUntilExit()
            output.readabilityHandler = nil
            #expect(process.terminationReason == .exit && process.terminationStatus == 0)
            let last = try #require(lines.value.last { $0.hasPrefix(#"{"revision":\#(next),"#) })
            let parsed = try JSONDecoder().decode(JSONValue.self, from: Data(last.utf8))
            guard case .object(let members) = parsed, case .object(let types)? = members["types"] else {
                Issue.record("not a change set line: \(last)")
                return
            }
            #expect(!types.isEmpty)
            #expect(try revision(of: fixture.database) == next)
            let stderr = String(
                decoding: (process.standardError as! Pipe).fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            #expect(stderr.contains("seed-import: waiting") && stderr.hasSuffix("seed-import: stopped\n"), "\(stderr)")
        }
    }
}

extension LiveCommandTests {
    /// `seed-import --live --json` on the fixture's database: the process, its output and the
    /// lines it printed so far.
    static func startLive(_ fixture: ImportFixture) throws -> (ChildProcess, FileHandle, Locked<[String]>) {
        let process = try Executables.start(
            "seed-import", CommandLineTests.arguments(fixture, database: fixture.database, ["--live", "--json"]),
            environment: CommandLineTests.environment)
        let lines = Locked<[String]>([])
        let output = (process.standardOutput as! Pipe).fileHandleForReading
        output.readabilityHandler = { handle in
            let text = String(decoding: handle.availableData, as: UTF8.self)
            lines.update { $0 += text.split(separator: "\n").map(String.init) }
        }
        return (process, output, lines)
    }

    /// Waits (60 s at most) for the line of change set `revision`.
    static func waitForLine(of revision: Int64, in lines: Locked<[String]>) async throws {
        try await SyncEngineTests.eventually("a line for revision \(revision)") {
            lines.value.contains { $0.hasPrefix(#"{"revision":\#(revision),"#) }
        }
    }
}

#if os(Linux)
extension LiveCommandTests {
    /// A live engine runs for days, a run after each server commit: its runs leave no file
    /// descriptor behind (each kept its HTTP session's, about four, before the sessions were shared).
    @Test func runAfterRunLeavesNoFileDescriptorBehind() async throws {
        try await withImportFixture { fixture in
            let (process, output, lines) = try Self.startLive(fixture)
            defer { if process.isRunning { process.terminate() } }
            func commitAndWait(seed: UInt64) async throws {
                try await fixture.mutate(1, seed: seed)
                try await Self.waitForLine(of: try await fixture.serverRevision(), in: lines)
            }
            func descriptors() throws -> Int {
                try FileManager.default.contentsOfDirectory(atPath: "/proc/\(process.processIdentifier)/fd").count
            }
            try await commitAndWait(seed: 500)
            let before = try descriptors()
            for run in 0..<30 { try await commitAndWait(seed: 501 + UInt64(run)) }
            let after = try descriptors()
            #expect(after - before < 10, "\(before) file descriptors, then \(after) after 30 more runs")
            process.terminate()
            try await process.waitUntilExit()
            output.readabilityHandler = nil
        }
    }
}
#endif

/// Observation through a running ``SyncEngine``: rows and types, after server change sets, local
/// writes (a temporary key followed to the real one) and a replacement.
@Suite(.timeLimit(.minutes(3))) struct EngineObservationTests {
    @Test func aRowObserverSeesTheRowNowThenEachServerChangeThenItsDeletion() async throws {
        try await withImportFixture { fixture in
            let engine = try await SyncEngineTests.waitingEngine(fixture.importer().configuration)
            let (key, row) = try await Self.firstEvent(of: fixture)
            var rows = await engine.observe(type: "events", key: key).makeAsyncIterator()
            #expect(await rows.next()?.fields?["title"] == row["title"], "the row as it is now")
            var changes = await engine.observe(type: "events").makeAsyncIterator()

            var renamed = row
            renamed["title"] = "Renamed by the server"
            let updated = try await fixture.served.store.commit(
                ChangeSet(changes: [TypeChanges(type: "events", update: [key], attributes: [key.keyString!: renamed])]))
            let seen = await rows.next()
            #expect(seen?.fields?["title"] == "Renamed by the server")
            #expect(seen?.fields?["revision"] == .int(updated))
            #expect(await changes.next() == Self.changes(updated: [key]))

            _ = try await fixture.served.store.commit(
                ChangeSet(changes: [TypeChanges(type: "events", delete: [key])]))
            #expect(await rows.next() == ObservedRow(key: key, fields: nil), "nil once deleted")
            #expect(await changes.next() == Self.changes(deleted: [key]))
            await engine.stop()
            #expect(await rows.next() == nil, "observations end when the engine stops")
        }
    }

    @Test func aRowCreatedLocallyIsFollowedToTheKeyTheServerGivesIt() async throws {
        try await withImportFixture { fixture in
            let engine = try await SyncEngineTests.waitingEngine(
                fixture.importer(token: liveServerWriteToken).configuration)
            var changes = await engine.observe(type: "locations").makeAsyncIterator()
            let temporary = try await engine.write { changes in
                try changes.create("locations", ["name": "Pier", "city": "Oslo", "latitude": 59.9, "longitude": 10.7])
            }
            #expect(temporary == -1)
            var rows = await engine.observe(type: "locations", key: temporary).makeAsyncIterator()
            let local = await changes.next()
            #expect(local?.inserted == [temporary], "the local write, at once")
            var row = await rows.next()
            // The first value is the local row, unless the push was quicker: then the real one.
            if row?.key == temporary {
                #expect(row?.fields?["name"] == "Pier")
                row = await rows.next()
            }
            let real = try #require(row?.key)
            #expect(real.intValue.map { $0 > 0 } == true, "the server's key: \(real)")
            #expect(row?.fields?["name"] == "Pier")
            let pushed = await changes.next()
            #expect(pushed?.rekeyed[temporary] == real)
            #expect(pushed?.inserted.contains(real) == true)
            let serverRow = try await fixture.served.store.snapshotPage(
                of: "locations", after: .int(real.intValue! - 1), limit: 1)
            #expect(serverRow.rows.first?.first == real)
            await engine.stop()
        }
    }

    @Test func aReplacementTellsTypeObserversToReload() async throws {
        try await withImportFixture { fixture in
            let (_, newer, newerRevision) = try await fixture.installThenBuildNewerSeed(after: 5)
            let engine = SyncEngine(
                configuration: fixture.importer(seed: newer).configuration, options: .init(wait: 55))
            var changes = await engine.observe(type: "events").makeAsyncIterator()
            await engine.start()
            let first = await changes.next()
            #expect(first?.isReload == true, "\(String(describing: first))")
            try await SyncEngineTests.until(engine, "waiting") { if case .waiting = $0 { true } else { false } }
            #expect(try revision(of: fixture.database) >= newerRevision)
            await engine.stop()
        }
    }

    static func changes(updated: [JSONValue] = [], deleted: [JSONValue] = []) -> ObservedChanges {
        var changes = ObservedChanges()
        changes.updated = updated
        changes.deleted = deleted
        return changes
    }

    /// The first event on the server (or the one after `skipping` others), which no other row
    /// references, as a key and its fields (`revision` left out).
    static func firstEvent(of fixture: ImportFixture, skipping: Int = 0) async throws -> (
        JSONValue, [String: JSONValue]
    ) {
        let page = try await fixture.served.store.snapshotPage(of: "events", after: nil, limit: skipping + 1)
        let values = try #require(page.rows.last)
        var fields: [String: JSONValue] = [:]
        for (column, value) in zip(page.columns, values).dropFirst() where column != "revision" {
            fields[column] = value
        }
        return (values[0], fields)
    }
}

/// Edit sessions: the engine applies nothing while one is open, and the edit is pushed first when it commits.
@Suite(.timeLimit(.minutes(3))) struct EditSessionTests {
    @Test func anEditHoldsServerChangesBackUntilItIsCommittedThenPushesFirst() async throws {
        try await withImportFixture { fixture in
            let engine = try await SyncEngineTests.waitingEngine(
                fixture.importer(token: liveServerWriteToken).configuration)
            let (key, _) = try await EngineObservationTests.firstEvent(of: fixture)
            let before = try revision(of: fixture.database)
            let edit = await engine.beginEdit()
            #expect("\(await engine.currentState)" == "paused", "the held request ended: nothing will be applied")
            try await fixture.mutate(2, seed: 77)
            // The engine woke in under 30 ms before (live sync); half a second shows it holds back.
            try await Task.sleep(for: .milliseconds(500))
            #expect(try revision(of: fixture.database) == before, "no server change lands during the edit")
            try await edit.commit { try $0.update("events", key: key, ["title": "Edited in a session"]) }
            #expect(await edit.hasEnded)
            try await SyncEngineTests.eventually("the edit pushed and the server's changes applied") {
                let server = try await fixture.serverContents()
                let local = try contents(ofSeed: fixture.database)
                return server["events"]?.first { $0[0] == key }?[1] == "Edited in a session" && local == server
            }
            await #expect(throws: ImportError.self) { try await edit.commit { _ in } }
            await engine.stop()
        }
    }

    /// Edit sessions one after the other during a long catch-up: each waits for the
    /// batch in progress only, nothing lands while one is open, and the run goes on between them
    /// with what it downloaded. (A run paused by each session started over each time, and never
    /// applied a batch.)
    @Test func aCatchUpGoesOnBetweenEditSessionsAndAppliesNothingDuringOne() async throws {
        try await withImportFixture(changesAfter: 0) { fixture in
            try await fixture.importer().run()
            try await fixture.mutate(600, seed: 5)
            let target = try await fixture.serverRevision()
            let engine = SyncEngine(
                configuration: fixture.importer(maxRowsPerTransaction: 50, syncLimit: 300).configuration)
            await engine.start()
            let sessions = Task {
                var seen: [(during: Bool, held: Bool)] = []
                while !Task.isCancelled {
                    // A gap shorter than a run's start: a run that started over never got to a batch.
                    try? await Task.sleep(for: .milliseconds(5))
                    let edit = await engine.beginEdit()
                    let first = try revision(of: fixture.database)
                    try? await Task.sleep(for: .milliseconds(40))
                    let last = try revision(of: fixture.database)
                    await edit.cancel()
                    seen.append((first < target, first == last))
                }
                return seen
            }
            try await SyncEngineTests.until(engine, "caught up") { if case .waiting = $0 { true } else { false } }
            sessions.cancel()
            let seen = try await sessions.value
            #expect(try revision(of: fixture.database) == target)
            let during = seen.filter { $0.during }.count
            let landed = seen.filter { !$0.held }.count
            #expect(during >= 3, "sessions during the catch-up: \(during) of \(seen.count)")
            #expect(landed == 0, "batches landed during \(landed) of \(seen.count) edit sessions")
            #expect(try contents(ofSeed: fixture.database) == (try await fixture.serverContents()))
            await engine.stop()
        }
    }

    /// A 410 recovery: a session that begins while the engine downloads the snapshot is not held
    /// back by the download (the lowest of priorities), the replacement of every row waits for the
    /// session to end, and the edit made in it is carried into the new database and pushed. The
    /// engine's live wait is ten minutes: an edit that waited for the engine's next wake instead of
    /// starting a run would not be pushed within `eventually`'s minute.
    @Test func aRecoveryDownloadsDuringAnEditSessionAndReplacesAfterIt() async throws {
        try await withImportFixture(events: 20_000, locations: 200, changesAfter: 10, maxWait: .seconds(600)) {
            fixture in
            try await fixture.importer(token: liveServerWriteToken).run()
            let before = try revision(of: fixture.database)
            try await fixture.mutate(20, seed: 21)
            _ = try await fixture.served.store.compact(keepingRevisions: 5)
            let (key, _) = try await EngineObservationTests.firstEvent(of: fixture)
            let events = Locked<[ImportEvent]>([])
            let (downloading, started) = AsyncStream.makeStream(of: Void.self)
            let engine = SyncEngine(
                configuration: fixture.importer(token: liveServerWriteToken).configuration, options: .init(wait: 600)
            ) { event in
                events.update { $0.append(event) }
                if case .downloadingSnapshot = event { started.yield() }
            }
            let replaced = { events.value.contains { if case .replaced = $0 { true } else { false } } }
            await engine.start()
            for await _ in downloading { break }
            let edit = await engine.beginEdit()
            #expect(!replaced(), "beginEdit waited for the snapshot's download")
            try await Task.sleep(for: .milliseconds(500))  // the download alone takes about a second here
            #expect(!replaced(), "the database was replaced during an edit session")
            #expect(try revision(of: fixture.database) == before)
            try await edit.commit { try $0.update("events", key: key, ["title": "Edited during a recovery"]) }
            // The run may have ended before the commit: the commit starts the next, not the wake.
            try await SyncEngineTests.eventually("the edit pushed from the replaced database") {
                let server = try await fixture.serverContents()
                let local = try contents(ofSeed: fixture.database)
                return server["events"]?.first { $0[0] == key }?[1] == "Edited during a recovery" && local == server
            }
            #expect(replaced())
            await engine.stop()
        }
    }

    /// A committed edit (a `write`, or a session's commit) in an engine that has caught up is
    /// pushed in a catch-up of its own: no schema request, so no whole run. While another importer
    /// holds the database's lock, the push gives way to a whole run, which waits for the lock.
    @Test func aCommittedEditIsPushedWithoutAWholeRun() async throws {
        try await withImportFixture { fixture in
            let url = fixture.served.url
            let engine = try await SyncEngineTests.waitingEngine(
                fixture.importer(token: liveServerWriteToken).configuration)
            let runs = try await answeredRequests("/v1/schema", on: url)
            let (key, _) = try await EngineObservationTests.firstEvent(of: fixture)
            func pushed(_ title: String) async throws {
                try await SyncEngineTests.eventually("'\(title)' pushed") {
                    let server = try await fixture.serverContents()
                    let (pending, local) = (try outboxCount(fixture.database), try contents(ofSeed: fixture.database))
                    return server["events"]?.first { $0[0] == key }?[1] == .string(title) && pending == 0
                        && local == server
                }
            }
            try await engine.write { try $0.update("events", key: key, ["title": "Written"]) }
            try await pushed("Written")
            let edit = await engine.beginEdit()
            try await edit.commit { try $0.update("events", key: key, ["title": "Committed"]) }
            try await pushed("Committed")
            #expect(try await answeredRequests("/v1/schema", on: url) == runs, "an edit's push asked for the schema")

            let lock = try await ImportLock.acquire(for: fixture.database, timeout: 5)
            try await engine.write { try $0.update("events", key: key, ["title": "Behind a lock"]) }
            try await Task.sleep(for: .milliseconds(300))
            #expect(try outboxCount(fixture.database) == 1, "nothing pushes while another importer works")
            lock.release()
            try await pushed("Behind a lock")
            #expect(try await answeredRequests("/v1/schema", on: url) == runs + 1, "the push gave way to a run")
            await engine.stop()
        }
    }

    /// The server moves to a new schema version while the engine waits: an edit written then (in a
    /// type both versions share) is pushed in the version the database is in, and the engine migrates
    /// at the next whole run (a push asks for no schema: here when a 2-second live wait ends after
    /// the 2 seconds between whole runs, as an engine without edits would), ending equal to the server.
    @Test func anEditWhileTheServerUpgradesIsPushedAndTheDatabaseMigrates() async throws {
        try await withImportFixture(liveReadWait: .seconds(2)) { fixture in
            let engine = SyncEngine(
                configuration: fixture.importer(token: liveServerWriteToken).configuration,
                options: .init(wait: 2, wholeRunInterval: 2))
            await engine.start()
            try await SyncEngineTests.until(engine, "waiting") { if case .waiting = $0 { true } else { false } }
            _ = try await fixture.served.store.upgrade(to: DemoDataset.schemaV2, renaming: DemoDataset.v2Renames)
            try await engine.write { changes in
                try changes.create("locations", ["name": "Pier", "city": "Oslo", "latitude": 59.9, "longitude": 10.7])
            }
            try await SyncEngineTests.eventually("the edit pushed and the database migrated") {
                try await Self.pushedAndEqual(fixture, location: "Pier")
            }
            #expect(try SeedFile(path: fixture.database).metadata().schemaVersion == 2)
            await engine.stop()
        }
    }

    /// A push checks that the database is still in the version its last run caught up in: after
    /// another importer migrated it, the push gives way to a whole run, which pushes the edit from
    /// the new version.
    @Test func aPushIntoADatabaseMigratedSinceGivesWayToAWholeRun() async throws {
        try await withImportFixture { fixture in
            let url = fixture.served.url
            let engine = try await SyncEngineTests.waitingEngine(
                fixture.importer(token: liveServerWriteToken).configuration)
            _ = try await fixture.served.store.upgrade(to: DemoDataset.schemaV2, renaming: DemoDataset.v2Renames)
            let migration = try await fixture.importer().run().migration
            #expect(migration?.toVersion == 2, "the other importer migrated the database")
            let runs = try await answeredRequests("/v1/schema", on: url)
            try await engine.write { changes in
                try changes.create("locations", ["name": "Quay", "city": "Bergen", "latitude": 60.4, "longitude": 5.3])
            }
            try await SyncEngineTests.eventually("the edit pushed from version 2") {
                try await Self.pushedAndEqual(fixture, location: "Quay")
            }
            // A whole run asks for the schema (twice here: a server answers the unnamed request in
            // the oldest version it serves, then the newest by number); a push asks for none.
            #expect(try await answeredRequests("/v1/schema", on: url) > runs, "the push did not give way to a run")
            await engine.stop()
        }
    }

    /// Whether the server has the location named `name`, nothing waits to be pushed, and the app's
    /// database equals the server. A migration holds the database for a moment: a read it refuses
    /// means "not yet".
    static func pushedAndEqual(_ fixture: ImportFixture, location name: String) async throws -> Bool {
        let server = try await Fixtures.contents(of: fixture.served.store)
        let pushed = server["locations"]?.contains { $0.contains(.string(name)) } == true
        guard let pending = try? outboxCount(fixture.database), let local = try? contents(ofSeed: fixture.database)
        else { return false }
        return pushed && pending == 0 && local == server
    }

    @Test func theClosureFormCancelsAnEditItDidNotCommit() async throws {
        try await withImportFixture { fixture in
            let engine = try await SyncEngineTests.waitingEngine(fixture.importer().configuration)
            let pending = try await engine.edit { _ in
                #expect("\(await engine.currentState)" == "paused")
                return try await fixture.importer().pendingChangeSets()
            }
            #expect(pending == 0)
            try await SyncEngineTests.until(engine, "waiting again") { if case .waiting = $0 { true } else { false } }
            // An app's own pause outlasts an edit.
            await engine.pause()
            try await engine.edit { _ in }
            try await Task.sleep(for: .milliseconds(100))
            #expect("\(await engine.currentState)" == "paused")
            await engine.stop()
        }
    }
}
