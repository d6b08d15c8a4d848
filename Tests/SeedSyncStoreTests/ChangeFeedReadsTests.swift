import Foundation
import SeedSyncModel
import SeedSyncStore
import Testing

/// The change feed both stores serve: checked against a fresh state, cached change sets never read
/// twice, a range compaction removed meanwhile `historyExpired`, never a gap.
@Suite struct ChangeFeedReadsTests {
    /// A log of revisions 1 through `newest`, each 10 bytes, counting the reads it serves.
    private final class Log: @unchecked Sendable {
        let newest: Int64
        var minRevision: Int64 = 0
        private var ranges: [LogRange] = []
        private var released = true
        private let lock = NSLock()

        /// The ranges read so far.
        var reads: [LogRange] { lock.withLock { ranges } }

        /// While false, reads wait.
        func setReleased(_ value: Bool) { lock.withLock { released = value } }

        init(newest: Int64) { self.newest = newest }

        func readWhenReleased(_ range: LogRange) async throws -> LoggedChangeSets {
            let logged = read(range)
            while !lock.withLock({ released }) { try await Task.sleep(for: .milliseconds(1)) }
            return logged
        }

        var state: LogState { LogState(revision: newest, minRevision: minRevision, schemaVersion: 1) }

        func read(_ range: LogRange) -> LoggedChangeSets {
            lock.withLock { ranges.append(range) }
            let changeSets = (range.after + 1...range.last).map {
                EncodedChangeSet(revision: $0, json: Array(repeating: UInt8(ascii: "x"), count: 10))
            }
            return LoggedChangeSets(minRevision: minRevision, changeSets: changeSets)
        }
    }

    /// A feed as the stores ask for it, the log read shared between requests.
    private func feed(
        _ reads: ChangeFeedReads, _ log: Log, after: Int64, limit: Int = 100, budget: Int = 1 << 20,
        version: Int = 1, state: LogState? = nil
    ) async throws -> ChangeFeed {
        try await reads.feed(
            after: after, limit: limit, byteBudget: budget, version: version, state: state ?? log.state,
            read: { log.read($0) })
    }

    @Test func cachedChangeSetsAreNotReadAgain() async throws {
        let (reads, log) = (ChangeFeedReads(), Log(newest: 10))
        let first = try await feed(reads, log, after: 4)
        #expect(first.changeSets.map(\.revision) == Array(5...10))
        #expect(!first.hasMore)
        let second = try await feed(reads, log, after: 2)
        #expect(second.changeSets.map(\.revision) == Array(3...10))
        #expect(log.reads.map { [$0.after, $0.last] } == [[4, 10], [2, 10]])
        _ = try await feed(reads, log, after: 3, limit: 5)
        #expect(log.reads.count == 2, "3 through 8 were all cached")
    }

    /// A request that waited for a read of the same range takes the range from the cache that
    /// read filled, instead of reading the log again.
    @Test func aRequestThatWaitedForTheSameReadTakesItFromTheCache() async throws {
        let (reads, log) = (ChangeFeedReads(), Log(newest: 10))
        log.setReleased(false)
        let state = log.state
        let ask = { @Sendable in
            try await reads.feed(
                after: 4, limit: 100, byteBudget: 1 << 20, version: 1, state: state,
                read: { try await log.readWhenReleased($0) })
        }
        async let first = ask()
        while log.reads.isEmpty { try await Task.sleep(for: .milliseconds(1)) }
        async let second = ask()
        let range = LogRange(after: 4, last: 10, version: 1, byteBudget: 1 << 20)
        while reads.waiters(for: range) == 0 { try await Task.sleep(for: .milliseconds(1)) }
        log.setReleased(true)
        let (a, b) = try await (first, second)
        #expect(a.changeSets == b.changeSets)
        #expect(b.changeSets.map(\.revision) == Array(5...10))
        #expect(log.reads.count == 1, "the second request read the log again")
    }

    @Test func theLimitAndTheBudgetShortenTheFeed() async throws {
        let (reads, log) = (ChangeFeedReads(), Log(newest: 10))
        let limited = try await feed(reads, log, after: 0, limit: 3)
        #expect(limited.changeSets.map(\.revision) == [1, 2, 3])
        #expect(limited.hasMore && limited.maxRevision == 3)
        let budgeted = try await feed(reads, log, after: 0, budget: 25)
        #expect(budgeted.changeSets.map(\.revision) == [1, 2])
        #expect(budgeted.hasMore)
    }

    @Test func revisionsOutsideTheStateAreRefused() async throws {
        let (reads, log) = (ChangeFeedReads(), Log(newest: 10))
        log.minRevision = 5
        await #expect { try await feed(reads, log, after: 4) } throws: {
            ($0 as? SyncStoreError)?.code == .historyExpired
        }
        await #expect { try await feed(reads, log, after: 11) } throws: {
            ($0 as? SyncStoreError)?.code == .revisionAhead
        }
        #expect(log.reads.isEmpty)
    }

    /// Compaction between the state read and the log read: the log's own `minRevision` decides.
    @Test func aRangeCompactedAfterTheStateReadIsHistoryExpired() async throws {
        let (reads, log) = (ChangeFeedReads(), Log(newest: 10))
        let state = log.state
        log.minRevision = 6
        await #expect {
            try await feed(reads, log, after: 4, state: state)
        } throws: {
            ($0 as? SyncStoreError)?.code == .historyExpired
        }
    }

    @Test func versionsAreReadAndCachedApart() async throws {
        let (reads, log) = (ChangeFeedReads(), Log(newest: 3))
        _ = try await feed(reads, log, after: 0)
        _ = try await feed(reads, log, after: 0, version: 2)
        #expect(log.reads.map(\.version) == [1, 2])
    }
}
