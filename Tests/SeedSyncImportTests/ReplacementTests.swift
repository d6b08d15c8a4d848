import Foundation
import GRDB
import SeedSyncBuild
import SeedSyncClient
import SeedSyncImport
import SeedSyncModel
import SeedSyncSeed
import SeedSyncTesting
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A newer shipped seed, and the server's history expiring under the database.
@Suite struct ReplacementTests {
    @Test func aNewerSeedReplacesTheDatabaseAndOpenReadersKeepWorking() async throws {
        try await withImportFixture(changesAfter: 10) { fixture in
            let (installedRevision, newer, newerRevision) = try await fixture.installThenBuildNewerSeed(after: 30)
            try await fixture.mutate(5, seed: 22)
            let reader = try DatabaseQueue(path: fixture.database)
            #expect(try await reader.read(storedRevision) == installedRevision)

            let report = try await fixture.importer(seed: newer).run()

            #expect(
                report.replacements == [
                    Replacement(
                        reason: .newerSeed, source: .seed, fromRevision: installedRevision, toRevision: newerRevision)
                ])
            #expect(report.fromRevision == newerRevision)
            #expect(report.changeSets == 5)
            // The reader's connection still works, and its next transaction sees the new database.
            #expect(try await reader.read(storedRevision) == (try await fixture.serverRevision()))
            try reader.close()
            #expect(try contents(ofSeed: fixture.database) == (try await fixture.serverContents()))
        }
    }

    /// Without a manifest, a `.gz` seed is decompressed to learn its revision.
    @Test func aNewerGzipSeedWithoutAManifestIsFoundNewer() async throws {
        try await withImportFixture(changesAfter: 10) { fixture in
            let newer = try await fixture.installThenBuildNewerSeed(after: 30, gzip: true).newer
            try FileManager.default.removeItem(atPath: SeedManifest.path(forSeed: newer))
            let report = try await fixture.importer(seed: newer + ".gz").run()
            #expect(report.replacements.map(\.reason) == [.newerSeed])
            #expect(report.changeSets == 0)
            #expect(try contents(ofSeed: fixture.database) == (try await fixture.serverContents()))
        }
    }

    @Test func withoutReseedingTheDatabaseIsKeptAndSynced() async throws {
        try await withImportFixture(changesAfter: 10) { fixture in
            let newer = try await fixture.installThenBuildNewerSeed(after: 30).newer
            let report = try await fixture.importer(seed: newer, reseedIfNewer: false).run()
            #expect(report.replacements.isEmpty)
            #expect(report.changeSets == 30)
            #expect(try contents(ofSeed: fixture.database) == (try await fixture.serverContents()))
        }
    }

    @Test func anOlderSeedLeavesTheDatabaseAlone() async throws {
        try await withImportFixture(changesAfter: 10) { fixture in
            try await fixture.importer().run()
            try await fixture.mutate(3, seed: 21)
            let report = try await fixture.importer().run()
            #expect(report.replacements.isEmpty)
            #expect(report.changeSets == 3)
        }
    }

    /// 410 with a seed recent enough: the seed is installed again, then synced.
    @Test func anExpiredHistoryReinstallsTheSeedWhenItIsRecentEnough() async throws {
        try await withImportFixture(changesAfter: 10) { fixture in
            let (local, newer, newerRevision) = try await fixture.installThenBuildNewerSeed(after: 20)
            try await fixture.mutate(15, seed: 22)
            let compaction = try await fixture.served.store.compact(keepingRevisions: 17)
            #expect(compaction.minRevision > local && compaction.minRevision <= newerRevision)

            var events: [ImportEvent] = []
            for try await event in fixture.importer(seed: newer, reseedIfNewer: false).events() { events.append(event) }

            let replacement = Replacement(
                reason: .historyExpired, source: .seed, fromRevision: local, toRevision: newerRevision)
            #expect(events.contains(.replaced(replacement)))
            #expect(!events.contains { if case .downloadingSnapshot = $0 { true } else { false } })
            #expect(try contents(ofSeed: fixture.database) == (try await fixture.serverContents()))
        }
    }

    /// 410 with a seed older than the history: a full snapshot replaces the database.
    @Test func anExpiredHistoryBeyondTheSeedDownloadsASnapshot() async throws {
        try await withImportFixture(changesAfter: 10) { fixture in
            try await fixture.importer().run()
            let local = try revision(of: fixture.database)
            try await fixture.mutate(20, seed: 21)
            let compaction = try await fixture.served.store.compact(keepingRevisions: 5)
            let serverRevision = try await fixture.serverRevision()

            var events: [ImportEvent] = []
            for try await event in fixture.importer().events() { events.append(event) }

            #expect(events.contains(.downloadingSnapshot(minRevision: compaction.minRevision)))
            let replacement = Replacement(
                reason: .historyExpired, source: .snapshot, fromRevision: local, toRevision: serverRevision)
            #expect(events.contains(.replaced(replacement)))
            #expect(try contents(ofSeed: fixture.database) == (try await fixture.serverContents()))
            let folder = URL(fileURLWithPath: fixture.database).deletingLastPathComponent().path
            #expect(files(in: folder).allSatisfy { !$0.contains("snapshot") && !$0.contains("installing") })
        }
    }

    /// A snapshot download cut short (a stopped, cancelled or killed run leaves its `.partial`)
    /// goes on from its last whole page at the next run instead of starting over.
    @Test func anInterruptedSnapshotDownloadGoesOnWhereItStopped() async throws {
        try await withImportFixture(events: 25_000, locations: 100, changesAfter: 10) { fixture in
            try await fixture.importer().run()
            try await fixture.mutate(20, seed: 21)
            _ = try await fixture.served.store.compact(keepingRevisions: 5)
            let client = SyncClient(configuration: fixture.importer().configuration.server)
            let whole = try await Self.snapshotRequests(on: fixture.served.url) {
                _ = try await SeedBuilder(client: client, options: .init(output: fixture.served.path("whole.sqlite")))
                    .build()
            }
            let snapshot = fixture.database + ".snapshot"
            await #expect(throws: (any Error).self) {
                try await SeedBuilder(client: client, options: .init(output: snapshot)).build { event in
                    if case .page(type: "events", _, _) = event { throw CancellationError() }
                }
            }
            #expect(FileManager.default.fileExists(atPath: snapshot + ".partial"))

            let resumed = try await Self.snapshotRequests(on: fixture.served.url) { try await fixture.importer().run() }
            #expect(
                resumed > 0 && resumed < whole, "\(resumed) snapshot pages requested, \(whole) for a whole download")
            #expect(try contents(ofSeed: fixture.database) == (try await fixture.serverContents()))
            #expect(!FileManager.default.fileExists(atPath: snapshot + ".partial"))
        }
    }

    /// The snapshot pages the server at `url` answered while `work` ran.
    static func snapshotRequests(on url: URL, during work: () async throws -> Void) async throws -> Int {
        let before = try await answeredRequests("/v1/snapshot/", on: url)
        try await work()
        return try await answeredRequests("/v1/snapshot/", on: url) - before
    }
}
