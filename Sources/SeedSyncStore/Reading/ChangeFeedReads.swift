import SeedSyncModel

/// The change feed as both stores serve it, so that clients a few revisions behind (the common
/// case, and every client right after a commit) cost the store little.
///
/// A request reads the store's state fresh. The change sets this process already read come from
/// its ``ChangeSetCache``; the rest are read from the log, then cached. A committed revision never
/// changes, so only the state read must be newer than the request; the log read reports the
/// `minRevision` of its own snapshot, so a range that compaction removed in between is
/// `historyExpired`, never a gap.
///
/// Both stores share their reads: a state read that began after the request arrived, shared by
/// the requests that arrive together (`SharedReads`), so a crowd costs two state reads, not one
/// each, and a log read by one request for all those that need the same revisions (a read that
/// starts when the cache already holds its range takes it from there).
///
/// ```swift
/// let state = try await reads.state { try await readStateFromTheDatabase() }
/// return try await reads.feed(after: 41, limit: 100, byteBudget: 1 << 20, version: 1, state: state) { range in
///     try await readTheLog(range)  // revisions range.after + 1 through range.last, with minRevision
/// }
/// ```
package final class ChangeFeedReads: Sendable {
    /// The change sets already read, by version and revision.
    private let cache: ChangeSetCache
    private let states = SharedReads<Int, LogState>()
    private let logs = SharedReads<LogRange, LoggedChangeSets>()

    /// A feed whose cache holds `capacity` bytes of change sets at most.
    package init(capacity: Int = 64 << 20) {
        cache = ChangeSetCache(capacity: capacity)
    }

    /// The requests waiting for the next log read of `range` (for tests).
    package func waiters(for range: LogRange) -> Int {
        logs.waiters(for: range)
    }

    /// The store's state from a `read` that started after this call (shared with the calls that
    /// arrive while it has not started).
    package func state(_ read: @escaping @Sendable () async throws -> LogState) async throws -> LogState {
        try await states.value(for: 0, read: read)
    }

    /// The change sets after `revision`, at most `limit` and `byteBudget` bytes (the first always),
    /// in schema version `version`, as of `state`, with the log read shared.
    ///
    /// - Parameter read: reads revisions `range.after + 1` through `range.last` from the log in
    ///   `range.version`, with the log's `minRevision` in the same snapshot; it may stop early
    ///   (after the first change set past `range.byteBudget`), never leave a gap.
    /// - Throws: `SyncStoreError` `historyExpired` or `revisionAhead` for a revision the state does
    ///   not serve, or whatever `read` throws.
    package func feed(
        after revision: Int64, limit: Int, byteBudget: Int, version: Int, state: LogState,
        read: @escaping @Sendable (LogRange) async throws -> LoggedChangeSets
    ) async throws -> ChangeFeed {
        var (feed, range) = try start(
            after: revision, limit: limit, byteBudget: byteBudget, version: version, state: state)
        guard let range else { return feed.feed(newest: state.revision) }
        let logged = try await logs.value(for: range) { [cache] in
            // Those that waited for the read before this one may have cached the whole range.
            var cached = ChangeFeed.Builder(after: range.after, byteBudget: byteBudget)
            cache.fill(&cached, through: range.last, version: version)
            if cached.isFull || cached.revision == range.last {
                return LoggedChangeSets(minRevision: state.minRevision, changeSets: cached.changeSets)
            }
            let logged = try await read(range)
            cache.insert(logged.changeSets, version: version)
            return logged
        }
        return try finish(&feed, requested: revision, logged: logged, range: range, state: state)
    }

    /// Checks `revision` against `state` and fills the feed from the cache: the range still to
    /// read, if any.
    private func start(after revision: Int64, limit: Int, byteBudget: Int, version: Int, state: LogState)
        throws(SyncStoreError) -> (ChangeFeed.Builder, LogRange?)
    {
        if revision < state.minRevision {
            throw .historyExpired(requested: revision, minRevision: state.minRevision)
        }
        if revision > state.revision {
            throw .revisionAhead(requested: revision, revision: state.revision)
        }
        let last = revision + min(Int64(limit), state.revision - revision)
        var feed = ChangeFeed.Builder(after: revision, byteBudget: byteBudget)
        cache.fill(&feed, through: last, version: version)
        guard !feed.isFull, feed.revision < last else { return (feed, nil) }
        return (feed, LogRange(after: feed.revision, last: last, version: version, byteBudget: byteBudget))
    }

    /// Appends what the log read gave, unless compaction removed the range first.
    private func finish(
        _ feed: inout ChangeFeed.Builder, requested revision: Int64, logged: LoggedChangeSets, range: LogRange,
        state: LogState
    ) throws(SyncStoreError) -> ChangeFeed {
        if logged.minRevision > range.after {
            throw .historyExpired(requested: revision, minRevision: logged.minRevision)
        }
        for changeSet in logged.changeSets where !feed.append(changeSet) { break }
        return feed.feed(newest: state.revision)
    }
}

/// The revisions a store serves and its newest schema version, read together.
package struct LogState: Sendable {
    package var revision: Int64
    package var minRevision: Int64
    package var schemaVersion: Int

    package init(revision: Int64, minRevision: Int64, schemaVersion: Int) {
        self.revision = revision
        self.minRevision = minRevision
        self.schemaVersion = schemaVersion
    }
}

/// Revisions `after + 1` through `last` of the change log, in schema version `version`, for a
/// feed of `byteBudget` bytes (a read may stop after the first change set past it).
package struct LogRange: Hashable, Sendable {
    package var after: Int64
    package var last: Int64
    package var version: Int
    package var byteBudget: Int

    package init(after: Int64, last: Int64, version: Int, byteBudget: Int) {
        self.after = after
        self.last = last
        self.version = version
        self.byteBudget = byteBudget
    }
}

/// The change sets read of a ``LogRange``, consecutive from its first, with the log's
/// `minRevision` in the same snapshot.
package struct LoggedChangeSets: Sendable {
    package var minRevision: Int64
    package var changeSets: [EncodedChangeSet]

    package init(minRevision: Int64, changeSets: [EncodedChangeSet]) {
        self.minRevision = minRevision
        self.changeSets = changeSets
    }
}
