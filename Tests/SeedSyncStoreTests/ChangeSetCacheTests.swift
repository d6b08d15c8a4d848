import SeedSyncModel
import SeedSyncStore
import Testing

/// The change sets a store serves again from memory: consecutive from the feed's revision, in
/// the version asked for, within the feed's budget, the oldest entries evicted first.
@Suite struct ChangeSetCacheTests {
    private func changeSet(_ revision: Int64, bytes: Int = 10) -> EncodedChangeSet {
        EncodedChangeSet(revision: revision, json: Array(repeating: UInt8(ascii: "x"), count: bytes))
    }

    private func filled(
        _ cache: ChangeSetCache, after revision: Int64, through last: Int64, version: Int = 1, budget: Int = 1 << 20
    )
        -> ChangeFeed.Builder
    {
        var feed = ChangeFeed.Builder(after: revision, byteBudget: budget)
        cache.fill(&feed, through: last, version: version)
        return feed
    }

    @Test func fillsConsecutiveRevisionsUpToTheFirstMissing() {
        let cache = ChangeSetCache(capacity: 1 << 20)
        cache.insert([changeSet(5), changeSet(6), changeSet(8)], version: 1)
        #expect(filled(cache, after: 4, through: 10).changeSets.map(\.revision) == [5, 6])
        #expect(filled(cache, after: 5, through: 10).revision == 6)
        #expect(filled(cache, after: 6, through: 10).changeSets.isEmpty, "7 is missing: the store reads from 7")
        #expect(filled(cache, after: 4, through: 5).changeSets.map(\.revision) == [5], "never past the newest asked")
    }

    @Test func versionsAreCachedApart() {
        let cache = ChangeSetCache(capacity: 1 << 20)
        cache.insert([changeSet(1, bytes: 3)], version: 1)
        cache.insert([changeSet(1, bytes: 7)], version: 2)
        #expect(filled(cache, after: 0, through: 1, version: 1).changeSets.first?.json.count == 3)
        #expect(filled(cache, after: 0, through: 1, version: 2).changeSets.first?.json.count == 7)
        #expect(filled(cache, after: 0, through: 1, version: 3).changeSets.isEmpty)
    }

    @Test func theFeedsBudgetStopsTheFill() {
        let cache = ChangeSetCache(capacity: 1 << 20)
        cache.insert((1...10).map { changeSet($0, bytes: 100) }, version: 1)
        let feed = filled(cache, after: 0, through: 10, budget: 350)
        #expect(feed.changeSets.map(\.revision) == [1, 2, 3])
        #expect(feed.isFull)
    }

    @Test func theOldestGoFirstWhenFull() {
        let cache = ChangeSetCache(capacity: 300)
        cache.insert((1...3).map { changeSet($0, bytes: 100) }, version: 1)
        cache.insert([changeSet(4, bytes: 100)], version: 1)
        #expect(filled(cache, after: 0, through: 4).changeSets.isEmpty, "revision 1 was evicted")
        #expect(filled(cache, after: 1, through: 4).changeSets.map(\.revision) == [2, 3, 4])
        cache.insert([changeSet(5, bytes: 301)], version: 1)
        #expect(filled(cache, after: 4, through: 5).changeSets.isEmpty, "larger than the whole cache: not kept")
        #expect(filled(cache, after: 1, through: 4).changeSets.count == 3, "and it evicted nothing")
    }
}
