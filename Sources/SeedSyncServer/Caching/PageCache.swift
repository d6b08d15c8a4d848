import Foundation
import SeedSyncModel
import SeedSyncStore

/// Snapshot pages this process has read, kept for ``ServerConfiguration/snapshotMaxAge``: the
/// same answers HTTP caches in front of it may give for the rest of that time.
///
/// A page says the revision it was read at, and a client that names `notBefore` catches up from
/// the oldest revision its pages say (`docs/PROTOCOL.md` §5), so a page read a while ago, at
/// `notBefore` or later, is still a true answer for it: the catch-up brings its rows forward. Apps
/// that download a snapshot at about the same time ask for the same addresses (the first page,
/// then each page's `next`), so a crowd costs a read per page and lifetime, not one per app. A
/// request without `notBefore` comes from a client that may catch up from a revision read before
/// its first page (as every client could before pages were kept): it gets a page read after it
/// arrived.
///
/// Concurrent reads of one address are shared (``SharedReads``: a crowd costs the read under way
/// and one more for everyone who came during it). Pages are kept up to ``byteLimit`` bytes in all,
/// each counted with its address and a fixed overhead; past it the oldest go first, and a larger
/// page is not kept.
///
/// ```swift
/// let cache = PageCache(maxAge: .seconds(30))
/// let (page, source) = try await cache.page(at: address, notBefore: 40) { try await store.snapshotPageJSON(...) }
/// ```
package final class PageCache: @unchecked Sendable {
    /// What names a page: everything of its request but `notBefore`.
    package struct Address: Hashable, Sendable {
        package var type: String
        package var after: String?
        package var limit: Int
        package var version: Int
        package var fields: [String]?
        /// The scope values a page of a scoped type was read for (``ScopeList/parameter``), or
        /// `nil` for every row.
        package var scopes: String?
        /// What the answer is: a page, or the uniform fields of the type (`after` `nil`, `limit` 0).
        package var kind: Kind

        package enum Kind: Hashable, Sendable {
            case page
            case uniformFields
        }

        /// The bytes it holds in memory, about: its strings and a fixed overhead.
        package var size: Int {
            64 + type.utf8.count + (after?.utf8.count ?? 0) + (scopes?.utf8.count ?? 0)
                + (fields ?? []).reduce(0) { $0 + 16 + $1.utf8.count }
        }

        package init(
            type: String, after: String?, limit: Int, version: Int, fields: [String]?, scopes: String? = nil,
            kind: Kind = .page
        ) {
            self.kind = kind
            self.type = type
            self.after = after
            self.limit = limit
            self.version = version
            self.fields = fields
            self.scopes = scopes
        }
    }

    /// Where an answer's page came from: kept, or a read the request waited for (its own, or one
    /// it shared with concurrent requests of the same page).
    package enum Source: String, Sendable {
        case kept
        case read
    }

    /// A page's JSON, its entity tag and the revision it was read at.
    package struct Page: Sendable {
        package let body: [UInt8]
        let tag: EntityTag
        package let revision: Int64
        package let readAt: ContinuousClock.Instant
    }

    package let maxAge: Duration
    package let byteLimit: Int
    private var pages: [Address: Page] = [:]
    /// Every page kept, in the order it was kept (oldest at `oldest`): what goes first past the
    /// limit. An entry whose page was replaced since is skipped.
    private var order: [(address: Address, readAt: ContinuousClock.Instant)] = []
    private var oldest = 0
    private var bytes = 0
    private let lock = NSLock()
    private let reads = SharedReads<Address, Page>()

    /// The time now (a parameter for tests).
    private let now: @Sendable () -> ContinuousClock.Instant

    package init(
        maxAge: Duration, byteLimit: Int = 64 << 20,
        now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }
    ) {
        self.maxAge = maxAge
        self.byteLimit = byteLimit
        self.now = now
    }

    /// With `notBefore`, the kept page at `address` when it is younger than ``maxAge`` and read at
    /// `notBefore` or later; otherwise (and without `notBefore`) a `read` that began after this
    /// call, kept for the next requests.
    ///
    /// - Throws: what `read` throws; ``SyncStoreError`` `revisionAhead` when the page read now
    ///   is before `notBefore` (the client knows of revisions the store does not have).
    package func page(at address: Address, notBefore: Int64?, read: @escaping @Sendable () async throws -> [UInt8])
        async throws -> (page: Page, source: Source)
    {
        if let notBefore, let kept = kept(at: address, notBefore: notBefore) { return (kept, .kept) }
        let page = try await reads.value(for: address) { try await self.readAndKeep(address, read) }
        if let notBefore, page.revision < notBefore {
            throw SyncStoreError.revisionAhead(requested: notBefore, revision: page.revision)
        }
        return (page, .read)
    }

    /// How many more seconds `page` may be kept, by this process or a cache: ``maxAge`` less its
    /// age, rounded up to a whole second (`max-age`).
    package func secondsLeft(of page: Page) -> Int64 {
        let left = max(.zero, maxAge - (now() - page.readAt)).components
        return left.seconds + (left.attoseconds > 0 ? 1 : 0)
    }

    /// The bytes counted for the pages kept now.
    package var keptBytes: Int { lock.withLock { bytes } }

    /// The entries of the eviction order, stale ones included (for tests: it stays bounded).
    package var orderEntries: Int { lock.withLock { order.count - oldest } }

    private func kept(at address: Address, notBefore: Int64) -> Page? {
        guard maxAge > .zero else { return nil }
        return lock.withLock {
            guard let page = pages[address], now() - page.readAt < maxAge, page.revision >= notBefore
            else { return nil }
            return page
        }
    }

    private func readAndKeep(_ address: Address, _ read: @Sendable () async throws -> [UInt8]) async throws -> Page {
        let readAt = now()
        let body = try await read()
        guard let revision = SnapshotPage.revision(ofJSON: body) else { throw UnreadRevision(type: address.type) }
        let page = Page(body: body, tag: EntityTag(of: body), revision: revision, readAt: readAt)
        if maxAge > .zero, Self.cost(of: page, at: address) <= byteLimit { keep(page, at: address) }
        return page
    }

    /// What a kept page counts against ``byteLimit``: its body, its address (in the table and in
    /// the eviction order) and a fixed overhead for its entries.
    private static func cost(of page: Page, at address: Address) -> Int {
        page.body.count + 2 * address.size + 128
    }

    private func keep(_ page: Page, at address: Address) {
        lock.withLock {
            // A read that began earlier and ended later does not replace a newer page.
            if let current = pages[address], current.readAt > page.readAt { return }
            if let old = pages.updateValue(page, forKey: address) { bytes -= Self.cost(of: old, at: address) }
            bytes += Self.cost(of: page, at: address)
            order.append((address, page.readAt))
            while bytes > byteLimit, oldest < order.count {
                let (address, readAt) = order[oldest]
                oldest += 1
                if let kept = pages[address], kept.readAt == readAt {
                    pages[address] = nil
                    bytes -= Self.cost(of: kept, at: address)
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
