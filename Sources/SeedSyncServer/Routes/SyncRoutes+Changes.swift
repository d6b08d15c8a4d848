import HTTPTypes
import Hummingbird
import SeedSyncClient
import SeedSyncModel
import SeedSyncStore

/// `GET /v1/changes`: the change log as reads that ordinary HTTP caches can keep.
///
/// A committed revision never changes, so an answer that holds only committed revisions and
/// ends where no later commit can move its end is the same answer forever. The log is cut into
/// **blocks** of ``ServerConfiguration/changesBlockSize`` revisions (1,000: revisions 1-1000,
/// 1001-2000, ...); an answer from `after` ends at the end of `after`'s block, or sooner at
/// `limit` or at the size budget of a sync answer. Such an answer is **final** when it reaches
/// its block's end or stops at the limit or budget with later change sets committed: the server
/// marks it immutable for a year. Otherwise it ends at the newest revision, inside its block: the
/// **head**, kept for one second. Clients that start from the same seed ask for the same
/// addresses (the seed's revision, then block ends), so a cache in front of the origin answers all
/// of them from one origin read per block.
///
/// In an answer here, `hasMore` says whether the answer is final: ask again from `maxRevision`
/// (the next answer may be empty when the block ended at the newest revision). A head answer
/// says `false`, and the client goes on with `POST /v1/sync`, which pushes and waits.
///
/// A reader of some scope values (PROTOCOL.md §10) is answered for its grant and `private`, unless
/// the address names the values it reads (`scopes=`, see ``readScope(of:)``): then the answer is
/// for those values, whoever asks, and as shareable as an unscoped one. An answer of some scope
/// values is cut into blocks only when shared caches may keep it (``ServerConfiguration/sharedCache``);
/// otherwise each looks through to the newest revision, one request instead of one per block.
///
/// **Live reads** (`live=CURSOR`, see ``LiveCursor``): a caught-up client asks from its revision
/// and the server holds the request until a later revision commits, for at most
/// ``ServerConfiguration/liveReadWait`` (20 s; at most ``ServerConfiguration/maxWait``), the same for every client. Every client at one
/// revision asks one address, so a cache that makes concurrent requests for an address wait for
/// the first one's answer (nginx's `proxy_cache_lock`, a CDN's request collapsing) sends the origin
/// one held request per address, however many apps wait. An answer with change sets is as true
/// later as now (it is only not the newest), so it is kept for the wait plus 5 s: caches that count
/// a lifetime from the request's start (RFC 9111 adds the time the request was held) still keep it
/// for the clients collapsed onto it. An empty answer (the wait ended with no commit) goes stale at
/// the next commit; it carries a new cursor, higher than the one asked with, so the client's next
/// read is a new address that no cache holds an old answer for. Every live answer says its cursor
/// (`SeedSync-Live-Cursor`); a server that does not say one does not hold live reads.
extension SyncRoutes {
    func changes(_ request: Request) async throws -> Response {
        let query = request.uri.queryParameters
        guard let after = try Self.wholeNumber(query.get("after"), named: "after", atLeast: 0) else {
            throw ServerError.invalidParameter("after", "given: the revision to read from")
        }
        guard let version = try Self.version(query.get("schemaVersion"), named: "schemaVersion") else {
            throw ServerError.invalidParameter(
                "schemaVersion", "given: an answer is cached by its address, which must name the version")
        }
        let limit = try Self.limit(query.get("limit"), default: .max, max: .max)
        let live = try Self.wholeNumber(query.get("live"), named: "live", atLeast: 0).map(LiveCursor.init)
        try await checkHistory(after: after, chain: try Self.chain(query.get("chain")))
        let scope = try readScope(of: request.uri)
        // An answer no shared cache keeps (a reader's own grant, or without --shared-cache) looks
        // through to the newest revision: one request instead of one per block.
        let shared = scope?.addressed ?? true
        let blocks = scope == nil || (shared && configuration.sharedCache)
        let blockEnd = blocks ? Self.blockEnd(after: after, size: configuration.changesBlockSize) : .max
        let key = FeedRead(
            after: after, limit: Int(min(Int64(limit), blockEnd - after)), version: version,
            grant: scope?.grant ?? .all, through: blockEnd)
        let read = { @Sendable [store, configuration] in
            try await store.changeFeed(
                after: key.after, limit: key.limit, byteBudget: configuration.syncByteBudget, version: key.version,
                grant: key.grant, through: key.through)
        }
        var feed = try await read()
        let liveWait = min(configuration.liveReadWait, configuration.maxWait)
        if live != nil, feed.maxRevision <= after, try await hold(after: after, for: liveWait) {
            feed = try await wokenReads.value(for: key, read: read)
        }
        feed.hasMore = feed.hasMore || feed.maxRevision == blockEnd
        let body = try Self.encode(feed, results: nil, scopes: scope?.values, chains: try await chains(of: feed))
        // A live answer's entity tag holds its cursor, so that a cache never revalidates an empty
        // answer under one cursor with the same bytes under another.
        let next = live.map { feed.maxRevision > after ? LiveCursor.start : $0.next(every: liveWait) }
        let tag = EntityTag(of: next.map { body + Array("live \($0.value)".utf8) } ?? body)
        let head = live == nil ? "max-age=1" : "max-age=\(liveWait.components.seconds + 5)"
        var response = cacheable(
            body, tag: tag, lifetime: feed.hasMore ? Self.finalLifetime : head, answering: request, shared: shared)
        if let next { response.headers[HTTPField.Name.seedSyncLiveCursor] = String(next.value) }
        if let key = configuration.answerKey {
            let address = AnswerSignature.address(
                after: after, schemaVersion: version, limit: query.get("limit").map { _ in limit },
                scopes: scope.flatMap { $0.addressed ? ScopeList($0.values) : nil })
            response.headers[HTTPField.Name.seedSyncSignature] = try AnswerSignature.header(
                signing: body, at: address, with: key)
        }
        return response
    }

    /// The `Cache-Control` lifetime of an answer that ends at its block's end or a limit: it never changes.
    static var finalLifetime: String { "max-age=31536000, immutable" }

    /// A `chain` query parameter: the client's ``HistoryChain`` at `after`, when given.
    static func chain(_ text: String?) throws -> HistoryChain? {
        guard let text else { return nil }
        guard let chain = HistoryChain(hex: text) else {
            throw ServerError.invalidParameter("chain", "a history chain: 64 (or 8) lower-case hex digits")
        }
        return chain
    }

    /// The last revision of the block that holds `after + 1`: the next multiple of `size` (a size
    /// below 1 is taken as 1).
    static func blockEnd(after: Int64, size: Int64) -> Int64 {
        let size = max(size, 1)
        let (end, overflow) = (after - after % size).addingReportingOverflow(size)
        return overflow ? .max : end
    }
}

extension HTTPField.Name {
    /// `SeedSync-Signature`, on every `GET /v1/changes` answer of a server with an answer key.
    static let seedSyncSignature = HTTPField.Name(AnswerSignature.headerName)!
    /// `SeedSync-Live-Cursor`, on every live read's answer: the `live` value of the next read.
    static let seedSyncLiveCursor = HTTPField.Name(LiveCursor.headerName)!
}
