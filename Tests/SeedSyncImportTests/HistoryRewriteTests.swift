import Foundation
import GRDB
import SeedSyncClient
import SeedSyncDemo
import SeedSyncImport
import SeedSyncModel
import SeedSyncSQLiteStore
import SeedSyncStore
import SeedSyncTesting
import Testing

/// A server whose history was rewritten under the app (its store replaced by an older copy, which
/// then wrote other revisions): the app finds out at its next sync and rebuilds from a snapshot,
/// never keeping rows the server no longer has.
@Suite struct HistoryRewriteTests {
    /// `commitsAfterRestore`: 25 takes the restored server past the app's revision (the same
    /// revision numbers, other change sets); 3 leaves it behind the app.
    @Test(arguments: [25, 3])
    func aStoreReplacedByAnOlderCopyIsFoundAndTheAppRebuilt(commitsAfterRestore: Int) async throws {
        try await withImportFixture(changesAfter: 10) { fixture in
            let original = try #require(fixture.served.store as? SQLiteSyncStore)
            let backup = fixture.served.path("backup.sqlite")
            let backupRevision = try await original.revisions().revision
            _ = try await original.historyChains(from: backupRevision, through: backupRevision)
            try await original.pool.writeWithoutTransaction { db in
                try db.execute(sql: "VACUUM INTO ?", arguments: [backup])
            }
            try await fixture.mutate(15, seed: 22)
            try await fixture.importer().run()
            let appRevision = try revision(of: fixture.database)
            #expect(appRevision == backupRevision + 15)
            let stored = try await original.historyChains(from: appRevision, through: appRevision)[appRevision]
            #expect(try historyChain(of: fixture.database) == stored)

            let restored = try SQLiteSyncStore(path: backup)
            defer { try? restored.close() }
            _ = try await ChangeGenerator.mutate(restored, changes: commitsAfterRestore, seed: 99)
            // The histories agree up to the backup, and part there.
            #expect(
                try await restored.historyChains(from: backupRevision, through: backupRevision)
                    == (try await original.historyChains(from: backupRevision, through: backupRevision)))
            try await withLiveServer(restored) { url in
                let served = ServedStore(url: url, store: restored, directory: fixture.served.directory)
                let behind = ImportFixture(served: served, seed: fixture.seed, seedRevision: fixture.seedRevision)
                var events: [ImportEvent] = []
                for try await event in behind.importer().events() { events.append(event) }

                let serverRevision = try await restored.revisions().revision
                let replacement = Replacement(
                    reason: .historyRewritten, source: .snapshot, fromRevision: appRevision, toRevision: serverRevision)
                #expect(events.contains(.replaced(replacement)))
                #expect(try contents(ofSeed: fixture.database) == (try await Fixtures.contents(of: restored)))
                #expect(try revision(of: fixture.database) == serverRevision)
                let chain = try await restored.historyChains(from: serverRevision, through: serverRevision)
                #expect(try historyChain(of: fixture.database) == chain[serverRevision])

                // Rebuilt, the app syncs on as any other.
                _ = try await ChangeGenerator.mutate(restored, changes: 4, seed: 100)
                let report = try await behind.importer().run()
                #expect(report.replacements.isEmpty)
                #expect(report.changeSets == 4)
                #expect(try contents(ofSeed: fixture.database) == (try await Fixtures.contents(of: restored)))
            }
        }
    }

    /// An edit the app queued before it learns of the rewrite is kept through the rebuild and
    /// pushed to the restored server, which then holds it; nothing of the lost history stays.
    @Test func aPendingEditSurvivesTheRebuildAndIsPushed() async throws {
        try await withImportFixture(changesAfter: 10) { fixture in
            let original = try #require(fixture.served.store as? SQLiteSyncStore)
            let backup = fixture.served.path("backup.sqlite")
            try await original.pool.writeWithoutTransaction { db in
                try db.execute(sql: "VACUUM INTO ?", arguments: [backup])
            }
            try await fixture.mutate(15, seed: 23)
            try await fixture.importer().run()
            let restored = try SQLiteSyncStore(path: backup)
            defer { try? restored.close() }
            _ = try await ChangeGenerator.mutate(restored, changes: 20, seed: 98)
            // A row both histories still have, edited locally while the app cannot know.
            let kept = Set(try await restored.keys(of: "events"))
            let event = try #require(try await original.keys(of: "events").first { kept.contains($0) })
            try await fixture.importer().write { changes in
                try changes.update("events", key: event, ["title": "Edited before the rewrite was seen"])
            }
            try await withLiveServer(restored) { url in
                let served = ServedStore(url: url, store: restored, directory: fixture.served.directory)
                let behind = ImportFixture(served: served, seed: fixture.seed, seedRevision: fixture.seedRevision)
                let report = try await behind.importer(token: liveServerWriteToken).run()
                #expect(report.replacements.map(\.reason) == [.historyRewritten])
                #expect(report.pushed == 1 && report.pending == 0 && report.rejected == 0, "\(report)")
                let edited = JSONValue.string("Edited before the rewrite was seen")
                let events = try await Fixtures.contents(of: restored)["events"] ?? []
                #expect(events.contains { $0.first == event && $0.contains(edited) })
                #expect(try contents(ofSeed: fixture.database) == (try await Fixtures.contents(of: restored)))
            }
        }
    }

    /// The origin answers 409 `history_rewritten` to a chain that is not its own, on both reads;
    /// a client that sends none (an older app) is served as before, with the chains in the answer.
    @Test func theOriginChecksTheChainAClientSends() async throws {
        try await withImportFixture(changesAfter: 10) { fixture in
            let client = fixture.served.client()
            let revision = try await fixture.serverRevision()
            let answer = try await client.sync(from: revision - 2)
            #expect(answer.changeSets.count == 2)
            #expect(answer.chains?.count == 2)
            let wrong = HistoryChain(bytes: Array(repeating: 7, count: 32))!
            await #expect { try await client.sync(from: revision - 2, chain: wrong) } throws: {
                ($0 as? SyncClientError)?.code == .historyRewritten
            }
            await #expect { try await client.changes(after: revision - 2, chain: wrong, schemaVersion: 1) } throws: {
                ($0 as? SyncClientError)?.code == .historyRewritten
            }
            // A change set's chain is its prefix (8 bytes); the origin takes it as it takes a whole value.
            let right = try #require(answer.chains?.first)
            #expect(right.bytes.count == HistoryChain.prefixLength)
            #expect(try await client.sync(from: revision - 1, chain: right).maxRevision == revision)
            let wrongPrefix = HistoryChain(bytes: Array(repeating: 7, count: HistoryChain.prefixLength))!
            await #expect { try await client.sync(from: revision - 1, chain: wrongPrefix) } throws: {
                ($0 as? SyncClientError)?.code == .historyRewritten
            }
            #expect(try await client.sync(from: revision, chain: answer.chain).changeSets.isEmpty)
        }
    }
}

/// The history chain stored in a seed-format database (`history_chain`).
func historyChain(of database: String) throws -> HistoryChain? {
    let queue = try DatabaseQueue(path: database)
    defer { try? queue.close() }
    return try queue.read { db in
        try String.fetchOne(db, sql: "SELECT value FROM _seedsync_seed WHERE key = 'history_chain'")
    }.flatMap(HistoryChain.init(hex:))
}
