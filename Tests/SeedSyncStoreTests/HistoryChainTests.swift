import Foundation
import GRDB
import SeedSyncDemo
import SeedSyncModel
import SeedSyncPostgres
import SeedSyncSQLiteStore
import SeedSyncStore
import SeedSyncTesting
import Testing

/// The history chain each store keeps (`HistoryLedger`): a value per revision that links its
/// change set to every one before it.
@Suite struct HistoryChainTests {
    /// Every value is `SHA-256(previous ‖ change set)`, whoever wrote the revision (psql on
    /// PostgreSQL), another process reads the same values, and compaction keeps the value at the
    /// new `minRevision`.
    @Test(arguments: StoreBackend.tested)
    func eachValueLinksItsChangeSetToTheOnesBefore(backend: StoreBackend) async throws {
        try await backend.withDemoStore { store in
            _ = try await ChangeGenerator.mutate(store, changes: 30, seed: 7)
            if let postgres = store as? PostgresSyncStore {
                try await TestPostgres.run(
                    "UPDATE events SET title = 'written by psql' WHERE id = 1", on: postgres.location)
            }
            let (newest, start) = try await store.revisions()
            let values = try await store.historyChains(from: 0, through: newest)
            #expect(values.keys.sorted() == Array(start...newest))
            let feed = try await store.changeFeed(after: start, limit: 1_000, byteBudget: 1 << 30, version: nil)
            var chain = try #require(values[start])
            for changeSet in feed.changeSets {
                chain = chain.extended(by: changeSet.json)
                #expect(values[changeSet.revision] == chain, "revision \(changeSet.revision)")
            }
            try await withSecondStore(of: store) { second in
                let read = try await second.historyChains(from: 0, through: newest)
                #expect(read == values)
            }

            let compaction = try await store.compact(keepingRevisions: 10)
            let kept = try await store.historyChains(from: 0, through: newest)
            #expect(kept.keys.min() == compaction.minRevision)
            #expect(kept[compaction.minRevision] == values[compaction.minRevision])
            _ = try await ChangeGenerator.mutate(store, changes: 2, seed: 8)
            let next = try await store.revisions().revision
            let extended = try await store.historyChains(from: newest, through: next)
            let read = try await store.changeFeed(after: newest, limit: 10, byteBudget: 1 << 30, version: nil)
            #expect(extended[next] == read.changeSets.reduce(values[newest]!) { $0.extended(by: $1.json) })
        }
    }

    /// Two stores of the same changes start their chains from different random values: a store
    /// made again (or another dataset at the same address) never passes for the first. (The demo
    /// dataset is the exception: its chain starts from its recipe, so its seeds are reproducible.)
    @Test(arguments: StoreBackend.tested)
    func twoStoresOfTheSameChangesNeverShareAChain(backend: StoreBackend) async throws {
        try await backend.withStore(DemoDataset.schema) { first in
            try await backend.withStore(DemoDataset.schema) { second in
                for store in [first, second] { _ = try await ChangeGenerator.mutate(store, changes: 3, seed: 7) }
                let newest = try await first.revisions().revision
                #expect(try await second.revisions().revision == newest)
                #expect(try await first.historyChains(from: newest, through: newest)[newest] != nil)
                #expect(
                    try await first.historyChains(from: newest, through: newest)
                        != (try await second.historyChains(from: newest, through: newest)))
            }
        }
    }

    /// The requests a commit wakes ask for the same new values at once: the store reads them a
    /// few times for the crowd, not once per request (200 here).
    @Test(arguments: StoreBackend.tested)
    func aCrowdAskingForTheSameNewValuesCostsTheStoreAFewReads(backend: StoreBackend) async throws {
        try await backend.withDemoStore { store in
            _ = try await ChangeGenerator.mutate(store, changes: 5, seed: 7)
            let newest = try await store.revisions().revision
            let cache = try #require(store as? any HistoryChainRecords).chainCache
            let before = cache.storeReads.get()
            let answers = try await withThrowingTaskGroup(of: [Int64: HistoryChain].self) { group in
                for _ in 0..<200 { group.addTask { try await store.historyChains(at: [newest - 1, newest]) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(answers.count == 200 && Set(answers).count == 1 && answers[0].count == 2)
            let reads = cache.storeReads.get() - before
            #expect(reads >= 1 && reads <= 10, "\(reads) store reads for 200 requests")
            _ = try await store.historyChains(at: [newest])
            #expect(cache.storeReads.get() - before == reads, "a value read before comes from memory")
        }
    }

    @Test(arguments: StoreBackend.tested)
    func aRevisionPastTheNewestIsAhead(backend: StoreBackend) async throws {
        try await backend.withDemoStore { store in
            let newest = try await store.revisions().revision
            await #expect { try await store.historyChains(from: 0, through: newest + 1) } throws: {
                ($0 as? SyncStoreError)?.code == .revisionAhead
            }
        }
    }
}
