import Foundation
import SeedSyncDemo
import SeedSyncModel
import SeedSyncSQLiteStore
import SeedSyncStore
import SeedSyncTesting
import Testing

@Suite struct ConcurrencyTests {
    /// Many writers at once: the log stays gap-free and replaying it rebuilds the tables exactly.
    @Test(arguments: StoreBackend.tested) func concurrentWritersLeaveAGapFreeReplayableLog(backend: StoreBackend)
        async throws
    {
        try await backend.withStore { store in
            let writers = 8
            let commitsPerWriter = 25
            let revisions = try await Fixtures.commitConcurrently(writers: writers, commitsPerWriter: commitsPerWriter)
            {
                try await store.commit($0)
            }
            #expect(revisions.sorted() == Array(1...Int64(writers * commitsPerWriter)))
            try await backend.withStore { replica in try await expectReplayReproduces(store, into: replica) }
        }
    }

    func expectReplayReproduces(_ store: any SyncStore, into replica: any SyncStore) async throws {
        var revision: Int64 = 0
        var hasMore = true
        while hasMore {
            let feed = try await store.changeFeed(after: revision, limit: 37, byteBudget: 1 << 20)
            for encoded in feed.changeSets {
                var changeSet = try JSONDecoder().decode(ChangeSet.self, from: Data(encoded.json))
                #expect(changeSet.revision == revision + 1)
                changeSet.revision = nil
                revision = try await replica.commit(changeSet)
            }
            hasMore = feed.hasMore
        }
        #expect(revision == (try await store.schemaInfo().revision))
        #expect(try await Fixtures.contents(of: replica) == Fixtures.contents(of: store))
    }
}
