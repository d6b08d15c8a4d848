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

/// The `seed-import` executable: its output, its exit status, and what a SIGKILL leaves behind.
@Suite(.serialized) struct CommandLineTests {
    static let environment = ["SEED_TOKEN": liveServerToken]

    static func arguments(_ fixture: ImportFixture, seed: String? = nil, database: String, _ extra: [String] = [])
        -> [String]
    {
        ["--seed", seed ?? fixture.seed, "--database", database, "--server", fixture.served.url.absoluteString] + extra
    }

    @Test func printsAJSONSummaryAndExitsZeroWhenCaughtUp() async throws {
        try await withImportFixture { fixture in
            let first = try await Executables.run(
                "seed-import", Self.arguments(fixture, database: fixture.database, ["--json"]),
                environment: Self.environment)
            #expect(first.status == 0, "\(first.stderr)")
            let report = try JSONDecoder().decode(ImportReport.self, from: Data(first.stdout.utf8))
            #expect(report.installed)
            #expect(report.fromRevision == fixture.seedRevision)
            #expect(report.toRevision == (try await fixture.serverRevision()))

            let second = try await Executables.run(
                "seed-import", Self.arguments(fixture, database: fixture.database, ["--json", "--once"]),
                environment: Self.environment)
            let again = try JSONDecoder().decode(ImportReport.self, from: Data(second.stdout.utf8))
            #expect(second.status == 0)
            #expect(!again.installed && again.changeSets == 0)
        }
    }

    /// An app built for a schema version the server does not serve yet: the run succeeds in the
    /// version the database has, and says so (a warning, and the report's field).
    @Test func anExpectedVersionTheServerDoesNotServeIsAWarning() async throws {
        try await withImportFixture { fixture in
            let result = try await Executables.run(
                "seed-import",
                Self.arguments(fixture, database: fixture.database, ["--json", "--expect-schema-version", "99"]),
                environment: Self.environment)
            #expect(result.status == 0, "\(result.stderr)")
            let report = try JSONDecoder().decode(ImportReport.self, from: Data(result.stdout.utf8))
            #expect(report.expectedVersionNotServed == 99 && report.schemaVersion == 1)
            #expect(result.stderr.contains("warning: the server does not serve schema version 99"), "\(result.stderr)")
        }
    }

    @Test func failsWithOneClearLine() async throws {
        try await withImportFixture { fixture in
            let result = try await Executables.run(
                "seed-import", Self.arguments(fixture, database: fixture.database), environment: ["SEED_TOKEN": "wrong"]
            )
            #expect(result.status != 0)
            #expect(result.stdout.isEmpty)
            let lines = result.stderr.split(separator: "\n")
            #expect(lines.count == 1 && lines[0].contains("401"), "\(result.stderr)")
            #expect(!FileManager.default.fileExists(atPath: fixture.database), "a refused token installs nothing")

            let wrongVersion = try await Executables.run(
                "seed-import", Self.arguments(fixture, database: fixture.database, ["--expect-schema-version", "0"]),
                environment: Self.environment)
            #expect(wrongVersion.status == 64 && wrongVersion.stderr.contains("1 or more"), "\(wrongVersion.stderr)")
            let negative = try await Executables.run(
                "seed-import", Self.arguments(fixture, database: fixture.database, ["--expect-schema-version", "-1"]),
                environment: Self.environment)
            #expect(negative.status == 64 && negative.stderr.contains("--expect-schema-version must be 1 or more"))
            #expect(!FileManager.default.fileExists(atPath: fixture.database))
            let conflicting = try await Executables.run(
                "seed-import", Self.arguments(fixture, database: fixture.database, ["--once", "--watch"]))
            #expect(conflicting.status == 64)
            let noRows = try await Executables.run(
                "seed-import", Self.arguments(fixture, database: fixture.database, ["--rows-per-transaction", "0"]))
            #expect(noRows.status == 64 && noRows.stderr.contains("--rows-per-transaction"), "\(noRows.stderr)")
        }
    }

    /// Under a file-size limit (`ulimit -f`) the install fails with one line that says which file
    /// hit the limit and what to do, and leaves no half-written copy.
    @Test func aFileSizeLimitIsReportedByFileAndLeavesNoCopy() async throws {
        try await withImportFixture(events: 2000) { fixture in
            let result = try await Executables.run(
                "seed-import", Self.arguments(fixture, database: fixture.database), environment: Self.environment,
                fileSizeLimitKiB: 64)
            #expect(result.status != 0)
            let lines = result.stderr.split(separator: "\n")
            #expect(lines.count == 1, "\(result.stderr)")
            #expect(
                result.stderr.contains(fixture.database + ".installing") && result.stderr.contains("file-size limit"),
                "\(result.stderr)")
            #expect(
                !result.stderr.contains("SQLite error") && !result.stderr.contains("NSCocoaErrorDomain"),
                "\(result.stderr)")
            let folder = URL(fileURLWithPath: fixture.database).deletingLastPathComponent().path
            #expect(files(in: folder) == ["events.sqlite.lock"])
        }
    }

    /// A damaged newer seed: exit 0 (the database caught up), one warning line on stderr, and
    /// `seedProblem` in the JSON summary.
    @Test func aDamagedNewerSeedIsAWarningAndTheRunSucceeds() async throws {
        try await withImportFixture { fixture in
            let (_, newer, _) = try await fixture.installThenBuildNewerSeed(after: 10)
            try SeedDamage.changeCharacter(in: try SeedDamage.someTitle(in: newer), of: newer)
            let result = try await Executables.run(
                "seed-import", Self.arguments(fixture, seed: newer, database: fixture.database, ["--json"]),
                environment: Self.environment)
            #expect(result.status == 0, "\(result.stderr)")
            #expect(
                result.stderr.hasPrefix("seed-import: warning: the shipped seed was not used")
                    && result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
            let report = try JSONDecoder().decode(ImportReport.self, from: Data(result.stdout.utf8))
            #expect(report.seedProblem?.contains("does not match its manifest") == true)
            #expect(report.replacements.isEmpty)
        }
    }

    @Test func watchCatchesUpAgainAfterEachInterval() async throws {
        try await withImportFixture { fixture in
            let process = try Executables.start(
                "seed-import",
                Self.arguments(fixture, database: fixture.database, ["--watch", "--interval", "0.2", "--json"]),
                environment: Self.environment
            )
            defer { process.terminate() }
            // A watchdog: a child that stops printing ends the reads below instead of hanging the suite.
            DispatchQueue.global().asyncAfter(deadline: .now() + 60) { if process.isRunning { process.terminate() } }
            let output = (process.standardOutput as! Pipe).fileHandleForReading
            let first = try #require(try await offPool { Self.readLine(from: output) })
            #expect(try JSONDecoder().decode(ImportReport.self, from: Data(first.utf8)).installed)
            try await fixture.mutate(4, seed: 77)
            let revision = try await fixture.serverRevision()
            // A run may start while the four are committed: the runs after the install apply them
            // between them, each once, up to the server's revision.
            var (applied, reached) = (0, Int64(0))
            while reached < revision, let line = try await offPool({ Self.readLine(from: output) }) {
                let report = try JSONDecoder().decode(ImportReport.self, from: Data(line.utf8))
                applied += report.changeSets
                reached = report.toRevision
            }
            #expect(applied == 4)
            #expect(reached == revision)
        }
    }

    /// One line of a child's output, or `nil` when it ends first.
    static func readLine(from handle: FileHandle) -> String? {
        var line = Data()
        while true {
            guard let byte = try? handle.read(upToCount: 1), let first = byte.first else { return nil }
            if first == UInt8(ascii: "\n") { return String(decoding: line, as: UTF8.self) }
            line.append(first)
        }
    }

    /// SIGKILL at random points of install, replacement and sync, then a restart: every restart ends
    /// at the server's state, and no kill leaves a partial or damaged database at the destination.
    @Test func aKilledImportAlwaysRestartsToTheSameFinalState() async throws {
        try await withImportFixture(events: 20_000, locations: 200, changesAfter: 1500) { fixture in
            // A newer seed, then more change sets: replacing the database with it still leaves a sync.
            let newer = try await fixture.buildSeed("newer.sqlite")
            let newerRevision = try revision(of: newer)
            try await fixture.mutate(500, seed: 5)
            let expected = try await fixture.serverContents()
            let serverRevision = try await fixture.serverRevision()
            let clock = ContinuousClock()
            let start = clock.now
            let reference = try await Executables.run(
                "seed-import",
                Self.arguments(
                    fixture, database: fixture.served.path("reference/events.sqlite"),
                    ["--sync-limit", "50", "--rows-per-transaction", "500"]),
                environment: Self.environment)
            let duration = (clock.now - start)
            #expect(reference.status == 0, "\(reference.stderr)")

            var random = SplitMix64(seed: 2026)
            var outcomes: [String: Int] = [:]
            // 24 kills, 8 of each mode; then, when none of them landed in the sync by chance (it is
            // short beside the process's start on a loaded machine), up to 12 more of mode 0.
            var iteration = 0
            while iteration < 24 || (outcomes["mid-sync", default: 0] == 0 && iteration < 36) {
                defer { iteration += 1 }
                let database = fixture.served.path("crash-\(iteration)/events.sqlite")
                // Mode 0 starts from an installed seed, so the kill lands in the sync; mode 1 from
                // nothing, killed early, so it lands in the install; mode 2 from the old seed with the
                // newer one shipped, killed early, so it lands in the replacement or the sync after it.
                let mode = iteration < 24 ? iteration % 3 : 0
                let seed = mode == 2 ? newer : fixture.seed
                if mode != 1 { try Self.installCopy(of: fixture.seed, at: database) }
                let window = mode == 0 ? duration : duration / 4
                let delay = window * (Double(random.next() % 1000) / 1000)
                // Mode 0 commits every batch (a kill lands between two); the others hold one
                // transaction across the catch-up (a kill leaves the revision before it).
                let batches = mode == 0 ? ["--cache-mib", "0"] : []
                let arguments = Self.arguments(
                    fixture, seed: seed, database: database,
                    ["--sync-limit", "50", "--rows-per-transaction", "500"] + batches)
                var outcome = try await offPool { try Self.runAndKill(after: delay, arguments) }
                if outcome.hasPrefix("killed-at-") {
                    let revision = Int64(outcome.dropFirst("killed-at-".count))!
                    outcome =
                        switch revision {
                        case fixture.seedRevision: mode == 2 ? "before-replacement" : "at-seed"
                        case newerRevision where mode == 2: "at-newer-seed"
                        case serverRevision: "caught-up"
                        default: "mid-sync"
                        }
                }
                outcomes[outcome, default: 0] += 1
                try Self.checkAfterKill(database, seedRevision: fixture.seedRevision, serverRevision: serverRevision)

                let restart = try await Executables.run(
                    "seed-import", Self.arguments(fixture, seed: seed, database: database),
                    environment: Self.environment)
                #expect(restart.status == 0, "iteration \(iteration): \(restart.stderr)")
                #expect(try contents(ofSeed: database) == expected, "iteration \(iteration)")
                #expect(try revision(of: database) == serverRevision)
            }
            print("crash test: \(outcomes)")
            #expect(outcomes["mid-sync", default: 0] > 0, "no kill landed during the sync: \(outcomes)")
        }
    }

    /// Puts `seed` at `database` as an install leaves it: a copy switched to WAL mode.
    ///
    /// A plain copy would still be in rollback-journal mode, a state no importer leaves: the
    /// importer would switch it to WAL in place, and a kill during that switch leaves a hot
    /// `-journal` that only a read-write open rolls back (the next importer does; this test's
    /// read-only checks could not, which made it fail now and then).
    static func installCopy(of seed: String, at database: String) throws {
        try FileManager.default.createDirectory(
            atPath: (database as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: seed, toPath: database)
        let queue = try DatabaseQueue(path: database)
        try queue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA journal_mode = WAL") }
        try queue.close()
    }

    /// Starts `seed-import`, kills it with SIGKILL after `delay`, and says where it was.
    static func runAndKill(after delay: Duration, _ arguments: [String]) throws -> String {
        let database = arguments[arguments.firstIndex(of: "--database")! + 1]
        let process = try Executables.start("seed-import", arguments, environment: environment)
        Thread.sleep(forTimeInterval: Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18)
        guard process.isRunning else {
            process.waitUntilExit()
            return "finished"
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        guard FileManager.default.fileExists(atPath: database) else { return "before-install" }
        // The copy of the seed is beside the database from its install or replacement until the end of either.
        if FileManager.default.fileExists(atPath: database + ".installing") { return "installing-or-replacing" }
        return "killed-at-\(try revision(of: database))"
    }

    /// Whatever the kill interrupted, the destination holds no database or a sound one.
    static func checkAfterKill(_ database: String, seedRevision: Int64, serverRevision: Int64) throws {
        guard FileManager.default.fileExists(atPath: database) else { return }
        let file = try SeedFile(path: database)
        defer { try? file.close() }
        #expect(try file.quickCheck() == nil)
        let revision = try file.metadata().revision
        #expect(revision >= seedRevision && revision <= serverRevision)
    }
}
