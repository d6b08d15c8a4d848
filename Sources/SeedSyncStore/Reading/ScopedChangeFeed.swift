public import SeedSyncModel

extension SyncStore {
    /// The most revisions one scoped read looks through: a reader whose scope values changed
    /// nothing for a long stretch of the log gets an answer without change sets and `hasMore`,
    /// whose `maxRevision` moves it past the stretch, instead of a request that reads it all.
    public static var scopedScanLimit: Int { 10_000 }

    /// The default `changeFeed(after:limit:byteBudget:version:grant:through:)`: ``scannedChangeFeed(after:limit:byteBudget:version:grant:through:)``.
    public func changeFeed(
        after revision: Int64, limit: Int, byteBudget: Int, version: Int?, grant: ScopeGrant, through last: Int64
    ) async throws -> ChangeFeed {
        try await scannedChangeFeed(
            after: revision, limit: limit, byteBudget: byteBudget, version: version, grant: grant, through: last)
    }

    /// `changeFeed(after:limit:byteBudget:version:grant:through:)` through the newest revision.
    public func changeFeed(after revision: Int64, limit: Int, byteBudget: Int, version: Int?, grant: ScopeGrant)
        async throws -> ChangeFeed
    {
        try await changeFeed(
            after: revision, limit: limit, byteBudget: byteBudget, version: version, grant: grant, through: .max)
    }

    /// The change feed as a reader granted `grant` sees it, read by looking through the whole log: the store's feed with each change set
    /// made `ChangeSet.visible(to:in:)` and those that show it nothing left out, looking through
    /// revisions up to `last` at most (`GET /v1/changes` reads one block).
    ///
    /// The log is one log of global revisions, so a reader keeps one revision, as in a dataset
    /// without a scope. A revision left out is a **gap, not a loss**: the feed's `maxRevision` is
    /// the last revision it looked through (at most ``scopedScanLimit`` of them), which may be past
    /// its last change set, and a reader moves to it. For a grant of every value, or a dataset
    /// without a scope, this is the store's feed unchanged, byte for byte.
    ///
    /// ```swift
    /// let feed = try await store.scannedChangeFeed(
    ///     after: 41, limit: 100, byteBudget: 1 << 20, version: nil, grant: .only([.int(7)]), through: .max)
    /// ```
    public func scannedChangeFeed(
        after revision: Int64, limit: Int, byteBudget: Int, version: Int?, grant: ScopeGrant, through last: Int64
    ) async throws -> ChangeFeed {
        let bounded = { (after: Int64) in Int(min(Int64(limit), max(last - after, 0))) }
        let first = try await changeFeed(
            after: revision, limit: bounded(revision), byteBudget: byteBudget, version: version)
        guard !grant.isAll else { return first }
        let history = try await schemaHistory()
        let schema = (version.flatMap(history.version) ?? history.newest).schema
        guard schema.scope != nil else { return first }
        var filter = ScopedFeed(after: revision, limit: limit, byteBudget: byteBudget, grant: grant, schema: schema)
        var page = first
        while try filter.take(page), page.hasMore, filter.scanned < last,
            filter.scanned - revision < Self.scopedScanLimit
        {
            page = try await changeFeed(
                after: filter.scanned, limit: bounded(filter.scanned), byteBudget: byteBudget, version: version)
        }
        return filter.feed(hasMore: page.hasMore || filter.stoppedEarly)
    }
}

/// The state of one scoped read: the visible change sets collected and the last revision looked
/// through.
private struct ScopedFeed {
    let grant: ScopeGrant
    let schema: DatasetSchema
    let limit: Int
    var builder: ChangeFeed.Builder
    /// The last revision looked through: every change set up to it is in the feed or shows nothing.
    var scanned: Int64
    /// Whether the limit or the budget stopped the read before the page's end.
    var stoppedEarly = false

    init(after revision: Int64, limit: Int, byteBudget: Int, grant: ScopeGrant, schema: DatasetSchema) {
        self.grant = grant
        self.schema = schema
        self.limit = limit
        builder = ChangeFeed.Builder(after: revision, byteBudget: byteBudget)
        scanned = revision
    }

    /// Takes a page of the store's feed.
    ///
    /// - Returns: whether to read on (the page was taken whole).
    mutating func take(_ page: ChangeFeed) throws -> Bool {
        for logged in page.changeSets {
            guard builder.changeSets.count < limit else {
                stoppedEarly = true
                return false
            }
            if let seen = try ChangeSet(json: JSONParser.parse(logged.json)).visible(to: grant, in: schema) {
                guard builder.append(EncodedChangeSet(revision: logged.revision, json: seen.jsonBytes())) else {
                    stoppedEarly = true
                    return false
                }
            }
            scanned = logged.revision
        }
        scanned = max(scanned, page.maxRevision)
        return true
    }

    func feed(hasMore: Bool) -> ChangeFeed {
        ChangeFeed(maxRevision: scanned, hasMore: hasMore, changeSets: builder.changeSets)
    }
}
