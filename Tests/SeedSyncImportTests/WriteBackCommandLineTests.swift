import Foundation
import GRDB
import SeedSyncDemo
import SeedSyncImport
import SeedSyncModel
import SeedSyncSeed
import SeedSyncTesting
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `seed-import write` and pushes from the executable, and what a SIGKILL during them leaves.
@Suite(.serialized) struct WriteBackCommandLineTests {
    static let environment = ["SEED_TOKEN": liveServerWriteToken]

    /// A chain of `count` change sets: each creates a location and an event at it (temporary
    /// keys), and renames the event of the one before (a reference to its temporary key across
    /// change sets, so each waits for the one before to be answered).
    static func chain(_ name: String, count: Int) -> String {
        let changeSets = (0..<count).map { index in
            let create = """
                "locations": {"create": [-1], "attributes": {"-1": {"name": "\(name)-\(index)", "city": "Lyon", "latitude": 1.5, "longitude": 2.5}}},
                "events": {"create": [-\(index + 10)], \(index == 0 ? "" : "\"update\": [-\(index + 9)], ")"attributes": {
                  "-\(index + 10)": {"title": "\(name)-\(index)", "starts_at": "2026-12-01T18:00:00Z", "location_id": -1, "capacity": \(index), "cancelled": false}\(index == 0 ? "" : ",\n      \"-\(index + 9)\": {\"title\": \"\(name)-\(index - 1) (renamed)\"}")}}
                """
            return "{\"types\": [\"locations\", \"events\"],\n\(create)}"
        }
        return "[" + changeSets.joined(separator: ",\n") + "]"
    }

    static func write(_ json: String, to database: String, in folder: String, name: String) async throws
        -> Executables.Result
    {
        let file = folder + "/\(name).json"
        try Data(json.utf8).write(to: URL(fileURLWithPath: file))
        return try await Executables.run("seed-import", ["write", "--database", database, "--file", file, "--json"])
    }

    /// `write` prints the ids and keys, the next run pushes and reports each outcome; a read
    /// token catches up and exits 1 saying how many change sets wait.
    @Test func writeQueuesAndTheNextRunPushes() async throws {
        try await withImportFixture { fixture in
            let arguments = CommandLineTests.arguments(fixture, database: fixture.database)
            let install = try await Executables.run("seed-import", arguments, environment: Self.environment)
            #expect(install.status == 0, "\(install.stderr)")
            let written = try await Self.write(
                Self.chain("cli", count: 3), to: fixture.database, in: fixture.served.directory.path, name: "cli")
            #expect(written.status == 0, "\(written.stderr)")
            let queued =
                try JSONDecoder().decode([String: [Queued]].self, from: Data(written.stdout.utf8))["changeSets"] ?? []
            #expect(queued.count == 3 && Set(queued.map(\.id)).count == 3)
            #expect(
                queued.first?.keys["locations"]?["-1"] == -1 && queued.last?.keys["locations"]?["-1"] == -3, "\(queued)"
            )

            let refused = try await Executables.run(
                "seed-import", arguments, environment: ["SEED_TOKEN": liveServerToken])
            #expect(
                refused.status != 0 && refused.stderr.contains("3 local change sets are waiting"), "\(refused.stderr)")

            let pushed = try await Executables.run("seed-import", arguments + ["--json"], environment: Self.environment)
            #expect(pushed.status == 0, "\(pushed.stderr)")
            let report = try JSONDecoder().decode(ImportReport.self, from: Data(pushed.stdout.utf8))
            #expect(report.pushed == 3 && report.pending == 0)
            let lines = pushed.stderr.split(separator: "\n")
            #expect(
                lines.count == 3
                    && lines.allSatisfy { $0.contains("applied as revision") && $0.contains("locations -") },
                "\(pushed.stderr)")
            #expect(try contents(ofSeed: fixture.database) == (try await fixture.serverContents()))

            let broken = try await Self.write(
                #"[{"types": ["events"], "events": {"update": [-77], "attributes": {"-77": {"title": "x"}}}}]"#,
                to: fixture.database, in: fixture.served.directory.path, name: "broken")
            #expect(
                broken.status != 0 && broken.stderr.contains("events[-77] does not exist")
                    && broken.stderr.contains("nothing was queued"), "\(broken.stderr)")

            // 60,000 new rows: a change set over the 4 MiB a push carries, refused before anything is written.
            let rows = (1...60_000).map {
                #""-\#($0)": {"name": "n\#($0)", "city": "Lyon", "latitude": 1.5, "longitude": 2.5}"#
            }
            let huge =
                #"[{"types": ["locations"], "locations": {"create": [\#((1...60_000).map { "-\($0)" }.joined(separator: ", "))], "attributes": {\#(rows.joined(separator: ", "))}}}]"#
            let tooLarge = try await Self.write(
                huge, to: fixture.database, in: fixture.served.directory.path, name: "huge")
            #expect(
                tooLarge.status != 0 && tooLarge.stderr.contains("change set 1 of")
                    && tooLarge.stderr.contains("bytes of JSON, more than the 4194304")
                    && tooLarge.stderr.contains("nothing was written"), "\(tooLarge.stderr)")
            #expect(try Self.pending(in: fixture.database) == 0)
        }
    }

    struct Queued: Decodable {
        var id: String
        var keys: [String: [String: JSONValue]]
    }

    /// SIGKILL at random points while change sets are pushed and their keys replaced, 22 times,
    /// each time after queueing a new chain: after a restart nothing is applied twice, nothing
    /// queued is lost, and the app's database equals the server's tables.
    @Test func aKilledPushNeverAppliesTwiceOrLosesAChangeSet() async throws {
        try await withImportFixture { fixture in
            let arguments = CommandLineTests.arguments(fixture, database: fixture.database)
            let folder = fixture.served.directory.path
            #expect(try await Executables.run("seed-import", arguments, environment: Self.environment).status == 0)
            let perChain = 6
            _ = try await Self.write(
                Self.chain("reference", count: perChain), to: fixture.database, in: folder, name: "reference")
            let clock = ContinuousClock()
            let start = clock.now
            let reference = try await Executables.run("seed-import", arguments, environment: Self.environment)
            let window = clock.now - start
            #expect(reference.status == 0, "\(reference.stderr)")

            var random = SplitMix64(seed: 14)
            var outcomes: [String: Int] = [:]
            let iterations = 22
            for iteration in 0..<iterations {
                let queued = try await Self.queue("crash\(iteration)", count: perChain, in: fixture)
                let delay = window * (Double(random.next() % 1000) / 1000)
                let environment = Self.environment
                let finished = try await offPool { () -> Bool in
                    let process = try Executables.start("seed-import", arguments, environment: environment)
                    Thread.sleep(
                        forTimeInterval: Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18)
                    let running = process.isRunning
                    if running { kill(process.processIdentifier, SIGKILL) }
                    process.waitUntilExit()
                    return !running
                }
                let outcome = finished ? "finished" : try Self.outcome(of: fixture, queued: queued)
                outcomes[outcome, default: 0] += 1
            }
            let restart = try await Executables.run(
                "seed-import", arguments + ["--json"], environment: Self.environment)
            #expect(restart.status == 0, "\(restart.stderr)")
            print("write-back crash test: \(outcomes), window \(window)")
            #expect(outcomes["mid-push", default: 0] > 0, "no kill landed while pushing: \(outcomes)")

            let server = try await fixture.serverContents()
            Self.expectEachLocationOnce(on: server, prefix: "crash", iterations: iterations, perChain: perChain)
            let crashLocations = Set(
                (server["locations"] ?? []).filter { $0[1].stringValue?.hasPrefix("crash") ?? false }.map { $0[0] })
            let events = (server["events"] ?? []).filter { crashLocations.contains($0[4]) }
            #expect(events.count == iterations * perChain, "one event per queued change set")
            #expect(
                events.filter { $0[1].stringValue?.hasSuffix("(renamed)") ?? false }.count == iterations
                    * (perChain - 1))
            #expect(try Self.pending(in: fixture.database) == 0)
            #expect(try contents(ofSeed: fixture.database) == server)
        }
    }

    /// `seed-import --live` killed with SIGKILL at random moments, 12 times, each after queueing a
    /// new chain, while the server commits changes of its own: pushing, catching up, or holding
    /// its live request. After a restart each local change set is on the server once, nothing
    /// queued is lost, and the app's database equals the server's tables.
    @Test func aKilledLiveSyncNeverAppliesTwiceOrLosesAChangeSet() async throws {
        try await withImportFixture { fixture in
            let arguments = CommandLineTests.arguments(fixture, database: fixture.database)
            let folder = fixture.served.directory.path
            #expect(try await Executables.run("seed-import", arguments, environment: Self.environment).status == 0)
            // How long a run that pushes a chain takes, start to end.
            _ = try await Self.write(
                Self.chain("reference", count: 4), to: fixture.database, in: folder, name: "reference")
            let start = ContinuousClock.now
            #expect(try await Executables.run("seed-import", arguments, environment: Self.environment).status == 0)
            let window = (ContinuousClock.now - start) / .seconds(1)
            let (event, fields) = try await EngineObservationTests.firstEvent(of: fixture)
            var random = SplitMix64(seed: 23)
            var outcomes: [String: Int] = [:]
            let (iterations, perChain) = (12, 4)
            for iteration in 0..<iterations {
                let queued = try await Self.queue("live\(iteration)", count: perChain, in: fixture)
                // Even iterations are killed within the time a run that pushes takes, odd ones at any point.
                let fraction = Double(random.next() % 1000) / 1000
                let killAt = iteration % 2 == 0 ? window * fraction : 1.5 * fraction
                let commitAt = Double(random.next() % 1000) / 1000
                let process = try Executables.start(
                    "seed-import", arguments + ["--live"], environment: Self.environment)
                // A server change of its own meanwhile: the live request it holds ends, and the engine catches up.
                var renamed = fields
                renamed["title"] = .string("Renamed by the server \(iteration)")
                let commit = Task {
                    try await Task.sleep(for: .milliseconds(Int(commitAt * 1000)))
                    return try await fixture.served.store.commit(
                        ChangeSet(changes: [
                            TypeChanges(type: "events", update: [event], attributes: [event.keyString!: renamed])
                        ]))
                }
                try await Task.sleep(for: .milliseconds(Int(killAt * 1000)))
                #expect(process.isRunning, "seed-import --live runs until it is stopped")
                kill(process.processIdentifier, SIGKILL)
                try await process.waitUntilExit()
                _ = try await commit.value
                outcomes[try Self.outcome(of: fixture, queued: queued), default: 0] += 1
            }
            let restart = try await Executables.run("seed-import", arguments, environment: Self.environment)
            #expect(restart.status == 0, "\(restart.stderr)")
            print("live crash test: \(outcomes), window \(window) s")

            let server = try await fixture.serverContents()
            Self.expectEachLocationOnce(on: server, prefix: "live", iterations: iterations, perChain: perChain)
            #expect(try Self.pending(in: fixture.database) == 0)
            #expect(try contents(ofSeed: fixture.database) == server)
        }
    }

    /// Queues a chain of `count` change sets named `name` in the fixture's database; returns how
    /// many change sets wait in all.
    static func queue(_ name: String, count: Int, in fixture: ImportFixture) async throws -> Int {
        let written = try await write(
            chain(name, count: count), to: fixture.database, in: fixture.served.directory.path, name: name)
        #expect(written.status == 0, "\(written.stderr)")
        return try pending(in: fixture.database)
    }

    /// Where a kill left the push of `queued` change sets: before, during or after it.
    static func outcome(of fixture: ImportFixture, queued: Int) throws -> String {
        let left = try pending(in: fixture.database)
        return left == 0 ? "after-push" : left == queued ? "before-push" : "mid-push"
    }

    /// Each location of the chains `prefix0`… is on the server exactly once.
    static func expectEachLocationOnce(
        on server: [String: [[JSONValue]]], prefix: String, iterations: Int, perChain: Int
    ) {
        let names = (server["locations"] ?? []).compactMap(\.[1].stringValue)
        for iteration in 0..<iterations {
            for index in 0..<perChain {
                #expect(
                    names.filter { $0 == "\(prefix)\(iteration)-\(index)" }.count == 1,
                    "location \(prefix)\(iteration)-\(index) is on the server once")
            }
        }
    }

    static func pending(in database: String) throws -> Int {
        let queue = try DatabaseQueue(path: database)
        defer { try? queue.close() }
        return try queue.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM _seedsync_outbox") ?? 0 }
    }
}

extension JSONValue {
    fileprivate var stringValue: String? {
        if case .string(let text) = self { text } else { nil }
    }
}
