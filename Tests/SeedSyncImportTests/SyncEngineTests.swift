import Foundation
import Logging
import SeedSyncClient
import SeedSyncImport
import SeedSyncModel
import SeedSyncServer
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
@Suite struct SyncEngineTests {
    @Test func aServerChangeReachesTheDatabaseWhileTheEngineWaits() async throws {
        try await withImportFixture { fixture in
            let engine = SyncEngine(configuration: fixture.importer().configuration, options: .init(wait: 55))
            await engine.start()
            try await Self.until(engine, "waiting") { if case .waiting = $0 { true } else { false } }
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

    // MARK: - Support

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
@Suite struct LiveCommandTests {
    @Test func printsALinePerCommittedChangeSetUntilSIGTERM() async throws {
        try await withImportFixture { fixture in
            let process = try Executables.start(
                "seed-import",
                CommandLineTests.arguments(fixture, database: fixture.database, ["--live", "--json"]),
                environment: CommandLineTests.environment)
            defer { if process.isRunning { process.terminate() } }
            let lines = Locked<[String]>([])
            let output = (process.standardOutput as! Pipe).fileHandleForReading
            output.readabilityHandler = { handle in
                let text = String(decoding: handle.availableData, as: UTF8.self)
                lines.update { $0 += text.split(separator: "\n").map(String.init) }
            }
            let caughtUp = try await fixture.serverRevision()
            try await SyncEngineTests.eventually("the catch-up") {
                lines.value.contains { $0.hasPrefix(#"{"revision":\#(caughtUp),"#) }
            }
            try await fixture.mutate(1, seed: 123)
            let next = try await fixture.serverRevision()
            try await SyncEngineTests.eventually("a line for revision \(next)") {
                lines.value.contains { $0.hasPrefix(#"{"revision":\#(next),"#) }
            }
            process.terminate()
            try await offPool { process.waitUntilExit() }
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
