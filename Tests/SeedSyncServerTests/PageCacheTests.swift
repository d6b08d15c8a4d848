import Foundation
import SeedSyncModel
import SeedSyncServer
import Testing

/// The server's kept snapshot pages: shared reads for a crowd, the byte limit, `notBefore`.
@Suite struct PageCacheTests {
    static func page(revision: Int64, rows: Int = 0) -> [UInt8] {
        SnapshotPage(
            type: "events", revision: revision, columns: ["id", "revision"],
            rows: (0..<rows).map { [.int(Int64($0)), .int(revision)] }, next: .null
        ).jsonBytes()
    }

    static func address(_ after: String?) -> PageCache.Address {
        PageCache.Address(type: "events", after: after, limit: 10, version: 1, fields: nil)
    }

    @Test func aCrowdMissingOnePageCostsOneRead() async throws {
        let cache = PageCache(maxAge: .seconds(30))
        let reads = Counter()
        try await withThrowingTaskGroup(of: Int64.self) { group in
            for _ in 0..<50 {
                group.addTask {
                    try await cache.page(at: Self.address(nil), notBefore: nil) {
                        reads.add()
                        try await Task.sleep(for: .milliseconds(200))
                        return Self.page(revision: 7)
                    }.page.revision
                }
            }
            for try await revision in group { #expect(revision == 7) }
        }
        // The first caller's read, and at most one for everyone who came while it ran.
        #expect(reads.value <= 2)
    }

    @Test func theOldestPagesGoPastTheByteLimit() async throws {
        // What a page counts: its body, its address twice (table and order) and an overhead.
        let size = Self.page(revision: 1, rows: 100).count + 2 * Self.address("a").size + 128
        let cache = PageCache(maxAge: .seconds(30), byteLimit: size * 2)
        for key in ["a", "b", "c"] {
            _ = try await cache.page(at: Self.address(key), notBefore: nil) { Self.page(revision: 1, rows: 100) }
        }
        // "a" went when "c" came; "b" and "c" are kept.
        let reads = Counter()
        for key in ["b", "c", "a"] {
            _ = try await cache.page(at: Self.address(key), notBefore: 0) {
                reads.add()
                return Self.page(revision: 2, rows: 100)
            }
            #expect(reads.value == (key == "a" ? 1 : 0), "\(key)")
        }
        // A page read again is as young as its new read: "b" goes before it.
        let again = PageCache(maxAge: .seconds(30), byteLimit: size * 2)
        for (key, revision) in [("a", 1), ("b", 1), ("a", 9), ("c", 9)] as [(String, Int64)] {
            _ = try await again.page(at: Self.address(key), notBefore: revision) {
                Self.page(revision: revision, rows: 100)
            }
        }
        #expect(try await again.page(at: Self.address("a"), notBefore: 0) { Self.page(revision: 10) }.source == .kept)
        #expect(try await again.page(at: Self.address("b"), notBefore: 0) { Self.page(revision: 10) }.source == .read)
        // A page larger than the whole limit is served, not kept.
        let large = PageCache(maxAge: .seconds(30), byteLimit: 10)
        for _ in 0..<2 {
            let (page, source) = try await large.page(at: Self.address(nil), notBefore: nil) {
                Self.page(revision: 3, rows: 5)
            }
            #expect(page.revision == 3 && source == .read)
        }
    }

    /// Pages read again and again under the limit leave no trail: the eviction order stays about
    /// the size of what is kept.
    @Test func pagesReadAgainDoNotGrowTheOrder() async throws {
        let cache = PageCache(maxAge: .seconds(30))
        for round in 0..<5_000 {
            let key = "\(round % 3)"
            _ = try await cache.page(at: Self.address(key), notBefore: Int64(round)) {
                Self.page(revision: Int64(round))
            }
        }
        #expect(cache.orderEntries <= 3 * 2 + 1024 + 1)
    }

    /// A kept page says the lifetime it has left, rounded up to a second, and is served for it.
    @Test func aKeptPageSaysTheLifetimeItHasLeft() async throws {
        let clock = TestClock()
        let cache = PageCache(maxAge: .seconds(30), now: { clock.now })
        let (page, _) = try await cache.page(at: Self.address(nil), notBefore: 0) { Self.page(revision: 1) }
        #expect(cache.secondsLeft(of: page) == 30)
        clock.advance(.milliseconds(10_500))
        #expect(cache.secondsLeft(of: page) == 20)
        #expect(try await cache.page(at: Self.address(nil), notBefore: 0) { Self.page(revision: 2) }.source == .kept)
        clock.advance(.milliseconds(19_500))
        #expect(cache.secondsLeft(of: page) == 0)
        #expect(try await cache.page(at: Self.address(nil), notBefore: 0) { Self.page(revision: 2) }.source == .read)
    }

    /// With `notBefore`, a kept page read at it or later; without, a page read after the call.
    @Test func notBeforeChoosesWhatIsKept() async throws {
        let cache = PageCache(maxAge: .seconds(30))
        _ = try await cache.page(at: Self.address(nil), notBefore: nil) { Self.page(revision: 4) }
        let kept = try await cache.page(at: Self.address(nil), notBefore: 4) { Self.page(revision: 9) }
        #expect(kept.page.revision == 4 && kept.source == .kept)
        let plain = try await cache.page(at: Self.address(nil), notBefore: nil) { Self.page(revision: 7) }
        #expect(plain.page.revision == 7 && plain.source == .read)
        let fresh = try await cache.page(at: Self.address(nil), notBefore: 8) { Self.page(revision: 9) }
        #expect(fresh.page.revision == 9 && fresh.source == .read)
        await #expect {
            try await cache.page(at: Self.address(nil), notBefore: 12) { Self.page(revision: 9) }
        } throws: { ($0 as? SyncStoreError)?.code == .revisionAhead }
    }

    /// A page's address counts against the limit too: many small pages under long keys cannot
    /// hold more memory than the limit says.
    @Test func addressesCountAgainstTheLimit() async throws {
        let cache = PageCache(maxAge: .seconds(30), byteLimit: 1 << 20)
        let body = Self.page(revision: 1)
        for index in 0..<1_000 {
            let key = String(repeating: "k", count: 1_000) + "\(index)"
            _ = try await cache.page(at: Self.address(key), notBefore: nil) { body }
        }
        #expect(cache.keptBytes <= 1 << 20)
        // About 440 entries of 2 KiB of keys each fit, not the 1,000 their bodies alone would allow.
        #expect(cache.orderEntries < 500)
    }
}

/// A count that concurrent reads may raise.
final class Counter: @unchecked Sendable {
    private var count = 0
    private let lock = NSLock()
    func add() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}

/// A time that moves only when a test says so.
final class TestClock: @unchecked Sendable {
    private var instant = ContinuousClock.now
    private let lock = NSLock()
    var now: ContinuousClock.Instant { lock.withLock { instant } }
    func advance(_ duration: Duration) { lock.withLock { instant += duration } }
}
