import Foundation
import SeedSyncBuild
import SeedSyncClient
import SeedSyncImport
import SeedSyncModel
import SeedSyncTesting
import Testing

/// Shipped seeds and the server's history: a registered seed always catches up by sync; one the
/// history no longer reaches is not installed only to be thrown away.
@Suite struct RegisteredSeedTests {
    @Test func aRegisteredSeedCatchesUpBySyncAfterCompaction() async throws {
        try await withImportFixture { fixture in
            let build = try await fixture.served.builder("pinned.sqlite", token: liveServerAdminToken, register: true)
                .build()
            let registered = try #require(build.registered)
            #expect(registered.sha256 == build.manifest.sha256 && registered.revision == build.manifest.revision)
            #expect(try await fixture.served.client().registeredSeeds() == [registered])
            // Fewer change sets than would outweigh a snapshot of this small dataset (WayIn).
            try await fixture.mutate(60, seed: 7)
            let compaction = try await fixture.served.store.compact(keepingRevisions: 10)
            #expect(compaction.pinnedBy == registered && compaction.minRevision == registered.revision)
            var events: [ImportEvent] = []
            for try await event in fixture.importer(seed: build.output).events() { events.append(event) }
            guard case .finished(let report) = events.last else {
                Issue.record("\(events)")
                return
            }
            #expect(report.installed && report.replacements.isEmpty && report.changeSets == 60)
            #expect(report.wayIn?.taken.source.kind == .shippedSeed)
            #expect(!events.contains { if case .downloadingSnapshot = $0 { true } else { false } })
            #expect(try contents(ofSeed: fixture.database) == (try await fixture.serverContents()))
            // A token that may not register gets 403, and the build's seed is still there.
            await #expect { try await fixture.served.builder("other.sqlite", register: true).build() } throws: {
                ($0 as? SyncClientError)?.code == .forbidden
            }
        }
    }

    @Test func aSeedTheHistoryNoLongerReachesGoesStraightToASnapshot() async throws {
        try await withImportFixture { fixture in
            let compaction = try await fixture.served.store.compact(keepingRevisions: 5)
            #expect(compaction.minRevision > fixture.seedRevision && compaction.pinnedBy == nil)
            var events: [ImportEvent] = []
            for try await event in fixture.importer().events() { events.append(event) }
            #expect(events.contains(.seedSkipped(revision: fixture.seedRevision, minRevision: compaction.minRevision)))
            #expect(events.contains(.downloadingSnapshot(minRevision: compaction.minRevision)))
            guard case .finished(let report) = events.last else {
                Issue.record("\(events)")
                return
            }
            #expect(report.installed && report.seedProblem?.contains("could not catch up") == true)
            #expect(report.replacements.isEmpty && report.changeSets == 0)
            #expect(try contents(ofSeed: fixture.database) == (try await fixture.serverContents()))
            let folder = (fixture.database as NSString).deletingLastPathComponent
            #expect(!files(in: folder).contains { $0.contains("snapshot") || $0.contains("installing") })
        }
    }
}
