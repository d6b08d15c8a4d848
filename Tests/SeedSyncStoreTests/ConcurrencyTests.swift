import Foundation
import SeedSyncDemo
import SeedSyncModel
import SeedSyncStore
import SeedSyncTesting
import Testing

@Suite struct ConcurrencyTests {
    /// Many writers at once: the log stays gap-free and replaying it rebuilds the tables exactly.
    @Test func concurrentWritersLeaveAGapFreeReplayableLog() async throws {
        try await withTemporaryDirectory { directory in
            let store = try await Fixtures.emptyStore(in: directory)
            let writers = 8, commitsPerWriter = 25
            let revisions = try await Fixtures.commitConcurrently(writers: writers, commitsPerWriter: commitsPerWriter) {
                try await store.commit($0)
            }
            #expect(revisions.sorted() == Array(1...Int64(writers * commitsPerWriter)))
            try await expectReplayReproduces(store, in: directory)
        }
    }

    func expectReplayReproduces(_ store: SQLiteSyncStore, in directory: URL) async throws {
        let replica = try await Fixtures.emptyStore(in: directory, name: "replica.sqlite")
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
