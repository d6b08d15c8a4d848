import Foundation
import GRDB
import SeedSyncDemo
import SeedSyncModel
import SeedSyncSeed
import SeedSyncTesting
import Testing

/// `seed-import` killed with SIGKILL while it migrates a database to a newer schema version, 24
/// times: no kill leaves a file that claims the new version without being whole, and every
/// restart ends equal to the server.
@Suite struct MigrationCrashTests {
    @Test func aKilledMigrationRestartsOrFinishesAndEndsEqualToTheServer() async throws {
        try await withImportFixture(events: 20_000, locations: 200, changesAfter: 300) { fixture in
            // The app's seed is at the upgrade: its run catches up a little in version 1, then migrates.
            let seed = try await fixture.buildSeed("at-upgrade.sqlite")
            _ = try await fixture.served.store.upgrade(to: DemoDataset.schemaV2, renaming: DemoDataset.v2Renames)
            try await fixture.mutate(300, seed: 41)
            let expected = try await fixture.serverContents()
            let serverRevision = try await fixture.serverRevision()
            var random = SplitMix64(seed: 2027)
            var outcomes: [String: Int] = [:]
            for iteration in 0..<24 {
                let database = fixture.served.path("migration-\(iteration)/events.sqlite")
                try CommandLineTests.installCopy(of: seed, at: database)
                let arguments = CommandLineTests.arguments(fixture, seed: seed, database: database)
                // Even iterations are killed once the download has begun, odd ones at any point of the run.
                let delay = Double(random.next() % 1000) / 1000
                let outcome = try await offPool {
                    try Self.runAndKill(arguments, database: database, afterStaging: iteration % 2 == 0, delay: delay)
                }
                outcomes[outcome, default: 0] += 1
                try Self.checkAfterKill(database)
                let restart = try await Executables.run(
                    "seed-import", CommandLineTests.arguments(fixture, seed: seed, database: database),
                    environment: CommandLineTests.environment)
                #expect(restart.status == 0, "iteration \(iteration): \(restart.stderr)")
                #expect(try contents(ofSeed: database) == expected, "iteration \(iteration)")
                #expect(try revision(of: database) == serverRevision)
                #expect(!FileManager.default.fileExists(atPath: database + ".migration"))
            }
            print("migration crash test: \(outcomes)")
            #expect(outcomes["migrating", default: 0] > 0, "no kill landed in the migration: \(outcomes)")
        }
    }

    /// Starts `seed-import`; kills it after `delay` seconds of the run, or, with `afterStaging`,
    /// once the migration's staging file appeared and up to a tenth of `delay` after. Says where
    /// the kill landed.
    static func runAndKill(_ arguments: [String], database: String, afterStaging: Bool, delay: Double) throws
        -> String
    {
        let process = try Executables.start("seed-import", arguments, environment: CommandLineTests.environment)
        if afterStaging {
            let deadline = Date().addingTimeInterval(60)
            while process.isRunning, !FileManager.default.fileExists(atPath: database + ".migration"),
                Date() < deadline
            {
                Thread.sleep(forTimeInterval: 0.002)
            }
            Thread.sleep(forTimeInterval: delay / 10)
        } else {
            Thread.sleep(forTimeInterval: delay)
        }
        guard process.isRunning else {
            process.waitUntilExit()
            return "finished"
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        if FileManager.default.fileExists(atPath: database + ".migration") { return "migrating" }
        let version = try SeedFile(path: database).metadata().schemaVersion
        return version == 2 ? "migrated" : "version-1"
    }

    /// Whatever the kill interrupted, the database is sound and wholly in one version: its
    /// metadata, its tables and its rows agree.
    static func checkAfterKill(_ database: String) throws {
        let file = try SeedFile(path: database)
        defer { try? file.close() }
        #expect(try file.quickCheck() == nil)
        let metadata = try file.metadata()
        #expect([1, 2].contains(metadata.schemaVersion))
        let queue = try DatabaseQueue(
            path: database,
            configuration: {
                var c = Configuration()
                c.readonly = true
                return c
            }())
        defer { try? queue.close() }
        let columns = try queue.read { db in try db.columns(in: "events").map(\.name) }
        let type = try #require(metadata.schema.type(named: "events"))
        #expect(Set(columns) == Set(type.columnNames), "tables of version \(metadata.schemaVersion)")
        #expect(try queue.read { db in try db.tableExists("venues") } == (metadata.schemaVersion == 2))
    }
}
