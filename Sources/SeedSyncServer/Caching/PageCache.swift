import Foundation
import SeedSyncModel

/// Snapshot pages this process has read, kept for ``ServerConfiguration/snapshotMaxAge``: the
/// same answers HTTP caches in front of it may give for that long.
///
/// A page says the revision it was read at, and a client catches up from the oldest revision its
/// pages say (`docs/PROTOCOL.md` §5), so a page read a while ago is still a true answer: the
/// catch-up brings its rows forward. Apps that download a snapshot at about the same time ask for
/// the same addresses (the first page, then each page's `next`), so a crowd costs one read per
/// page and lifetime, not one per app. A request that names `notBefore` is answered from here
/// only with a page read at that revision or later.
///
/// Concurrent misses of one address share one read (``SharedReads``). Pages are kept up to
/// ``byteLimit`` bytes in all; past it the oldest go first, and a larger page is not kept.
///
/// ```swift
/// let cache = PageCache(maxAge: .seconds(30))
/// let page = try await cache.page(at: address, notBefore: nil) { try await store.snapshotPageJSON(...) }
/// ```
final class PageCache: @unchecked Sendable {
    /// What names a page: everything of its request but `notBefore`.
    struct Address: Hashable, Sendable {
        var type: String
        var after: String?
        var limit: Int
        var version: Int
        var fields: [String]?
    }

    /// Where an answer's page came from: kept, or a read the request waited for (its own, or one
    /// it shared with concurrent requests of the same page).
    enum Source: String, Sendable {
        case kept
        case read
    }

    /// A page's JSON, its entity tag and the revision it was read at.
    struct Page: Sendable {
        let body: [UInt8]
        let tag: EntityTag
        let revision: Int64
        let readAt: ContinuousClock.Instant
    }

    let maxAge: Duration
    let byteLimit: Int
    private var pages: [Address: Page] = [:]
    /// Every page kept, in the order it was kept (oldest at `oldest`): what goes first past the
    /// limit. An entry whose page was replaced since is skipped.
    private var order: [(address: Address, readAt: ContinuousClock.Instant)] = []
    private var oldest = 0
    private var bytes = 0
    private let lock = NSLock()
    private let reads = SharedReads<Address, Page>()

    init(maxAge: Duration, byteLimit: Int = 64 << 20) {
        self.maxAge = maxAge
        self.byteLimit = byteLimit
    }

    /// The kept page at `address` when it is younger than ``maxAge`` and read at `notBefore` or
    /// later, else a new `read`, kept for the next requests.
    ///
    /// - Throws: what `read` throws; ``SyncStoreError`` `revisionAhead` when the page read now
    ///   is still before `notBefore` (the client knows of revisions the store does not have).
    func page(at address: Address, notBefore: Int64?, read: @escaping @Sendable () async throws -> [UInt8])
        async throws -> (page: Page, source: Source)
    {
        if let kept = kept(at: address, notBefore: notBefore) { return (kept, .kept) }
        var page = try await reads.value(for: address) { try await self.readAndKeep(address, read) }
        if let notBefore, page.revision < notBefore {
            // Shared with a read that began before this request's revision was committed.
            page = try await readAndKeep(address, read)
            guard page.revision >= notBefore else {
                throw SyncStoreError.revisionAhead(requested: notBefore, revision: page.revision)
            }
        }
        return (page, .read)
    }

    /// The bytes of the pages kept now.
    var keptBytes: Int { lock.withLock { bytes } }

    /// The entries of the eviction order, stale ones included (for tests: it stays bounded).
    var orderEntries: Int { lock.withLock { order.count - oldest } }

    private func kept(at address: Address, notBefore: Int64?) -> Page? {
        guard maxAge > .zero else { return nil }
        return lock.withLock {
            guard let page = pages[address], ContinuousClock.now - page.readAt < maxAge,
                page.revision >= notBefore ?? 0
            else { return nil }
            return page
        }
    }

    private func readAndKeep(_ address: Address, _ read: @Sendable () async throws -> [UInt8]) async throws -> Page {
        let readAt = ContinuousClock.now
        let body = try await read()
        guard let revision = SnapshotPage.revision(ofJSON: body) else {
            throw UnreadRevision(type: address.type)
        }
        let page = Page(body: body, tag: EntityTag(of: body), revision: revision, readAt: readAt)
        if maxAge > .zero, body.count <= byteLimit { keep(page, at: address) }
        return page
    }

    private func keep(_ page: Page, at address: Address) {
        lock.withLock {
            if let old = pages.updateValue(page, forKey: address) { bytes -= old.body.count }
            bytes += page.body.count
            order.append((address, page.readAt))
            while bytes > byteLimit, oldest < order.count {
                let (address, readAt) = order[oldest]
                oldest += 1
                if let kept = pages[address], kept.readAt == readAt {
                    pages[address] = nil
                    bytes -= kept.body.count
                }
            }
            // Entries of pages gone or replaced: dropped once they are most of the list.
            if order.count - oldest > 2 * pages.count + 1024 {
                order = order[oldest...].filter { pages[$0.address]?.readAt == $0.readAt }
                oldest = 0
            } else if oldest > 1024, oldest * 2 > order.count {
                order.removeFirst(oldest)
                oldest = 0
            }
        }
    }
}

/// A page written without its revision where ``SnapshotPage/revision(ofJSON:)`` finds it: a
/// store bug, answered 500.
private struct UnreadRevision: Error, CustomStringConvertible {
    let type: String
    var description: String { "a snapshot page of \(type) does not begin with its revision" }
}
