import Foundation
import Hummingbird
import Logging
import SeedSyncModel
import SeedSyncStore
import ServiceLifecycle

/// The endpoints of protocol v1 over one ``SyncStore``. See `docs/PROTOCOL.md`.
struct SyncRoutes<Context: RequestContext>: Sendable {
    let store: any SyncStore
    /// The store's schema versions as last read: for the key type of a snapshot's `after` (a
    /// type's key never changes) and the oldest version, what a client that names none is served
    /// in. Read again when a request names a type or version it lacks (an upgrade since).
    let versions: LockedValue<SchemaHistory>
    let configuration: ServerConfiguration
    /// Who may call what; `nil` serves without authentication.
    let authenticator: Authenticator?
    let metrics: ServerMetrics
    /// What held sync requests wait on (see ``RevisionWatch``).
    let signal: RevisionSignal
    /// The snapshot pages read lately (see ``PageCache``).
    let pages: PageCache
    /// The change feeds of requests woken by one commit: one read for the crowd, not one each.
    let wokenReads = SharedReads<FeedRead, ChangeFeed>()
    /// The folder of published seeds, when the server serves one.
    let published: PublishedSeeds?

    func add(to router: Router<Context>) {
        router.get("health") { _, _ in Self.health }
        router.head("health") { _, _ in Self.health.createHeadResponse() }
        let reader = router.group("v1").add(
            middleware: BearerAuthMiddleware(authenticator: authenticator, required: .read, metrics: metrics))
        reader.get("schema") { request, _ in try await schemaInfo(request) }
        reader.get("snapshot/:type") { request, context in try await snapshot(request, context) }
        reader.get("snapshot/:type/uniform") { request, context in try await uniformFields(request, context) }
        reader.post("sync") { request, _ in try await sync(request) }
        reader.get("changes") { request, _ in try await changes(request) }
        reader.get("auth") { request, _ in try authorize(request) }
        reader.get("seeds") { _, _ in try await seedList() }
        reader.get("sizes") { request, _ in try await sizes(request) }
        reader.get("seeds/:sha256/:file") { request, context in try await seedFile(request, context) }
        reader.head("seeds/:sha256/:file") { request, context in try await seedFile(request, context) }
        let admin = router.group("v1/admin").add(
            middleware: BearerAuthMiddleware(authenticator: authenticator, required: .admin, metrics: metrics))
        admin.post("changes") { request, _ in try await commit(request) }
        admin.post("seeds") { request, _ in try await register(request) }
        let operators = router.group("metrics").add(
            middleware: BearerAuthMiddleware(authenticator: authenticator, required: .admin, metrics: metrics))
        operators.get { _, context in await exposition(context) }
    }

    /// `GET /metrics`: ``ServerMetrics`` in Prometheus text format. A store that fails to answer
    /// is counted and logged, and the rest is still served (without the store's gauges).
    private func exposition(_ context: Context) async -> Response {
        var revisions: (revision: Int64, minRevision: Int64)?
        metrics.recordHeld(waiting: signal.waiting, keptPageBytes: pages.keptBytes)
        do {
            revisions = try await store.revisions()
        } catch let error as SyncStoreError {
            metrics.record(error)
            context.logger.error(
                "store failed",
                metadata: ["code": "\(error.code)", "error": "\(error.description)", "path": "/metrics"])
        } catch {
            context.logger.error(
                "store failed", metadata: ["error": "\(String(reflecting: error))", "path": "/metrics"])
        }
        var headers = HTTPFields()
        headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
        return Response(
            status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: metrics.exposition(revisions))))
    }

    /// `GET /health`; `HEAD /health` answers with its status and headers alone.
    private static var health: Response { json(Array(#"{"status":"ok"}"#.utf8)) }

    /// `GET /v1/schema[?version=N]`: the oldest version served by default, as every endpoint.
    private func schemaInfo(_ request: Request) async throws -> Response {
        let version = version(try Self.version(request.uri.queryParameters.get("version"), named: "version"))
        var info = try await store.schemaInfo(version: version, grant: RequestGrant.current.scopes)
        info.scopes = readScopes()?.values
        return Self.json(try JSONEncoder.stable().encode(info))
    }

    /// The version a request names, or the oldest served when it names none: every endpoint
    /// answers a request without a version in the same one, so a client that predates versions
    /// (it reads `/v1/schema`, then pages and change sets) is never answered in two.
    func version(_ named: Int?) -> Int {
        named ?? versions.get().oldest.number
    }

    /// The newest schema that has type `name`: the one last read, or the store's now.
    func type(named name: String) async throws -> EntityType {
        if let type = versions.get().newest.schema.type(named: name) { return type }
        let history = try await store.schemaHistory()
        versions.set(history)
        guard let type = history.newest.schema.type(named: name) else { throw SyncStoreError.unknownType(name) }
        return type
    }

    /// A schema version parameter: a whole number of 1 or more when given.
    static func version(_ text: String?, named name: String) throws -> Int? {
        try wholeNumber(text, named: name, atLeast: 1).map { Int($0) }
    }

    /// A whole-number query parameter of `minimum` or more, when given, written the one way a
    /// number is (`5`, not `+5` or `05`): an answer a cache keeps is kept under one address only.
    static func wholeNumber(_ text: String?, named name: String, atLeast minimum: Int64) throws -> Int64? {
        guard let text else { return nil }
        guard let number = Int64(text), String(number) == text, number >= minimum, number <= Int.max else {
            throw ServerError.invalidParameter(
                name, "a whole number of \(minimum) or more, in decimal digits alone (no sign, no leading zero)")
        }
        return number
    }

    /// A `limit` query parameter (see ``limit(_:default:max:)``).
    static func limit(_ text: String?, default defaultValue: Int, max maximum: Int) throws -> Int {
        try limit(wholeNumber(text, named: "limit", atLeast: 1).map { Int($0) }, default: defaultValue, max: maximum)
    }

    /// `POST /v1/sync`: applies the pushed change sets in order (a write token at least), then
    /// answers with the change sets after `maxRevision` and a result per pushed change set.
    private func sync(_ request: Request) async throws -> Response {
        let body = try await request.collectBody(
            decompressingUpTo: configuration.maxRequestBodySize, within: configuration.requestBodyTimeout)
        let sync = try Self.parse(body, as: "sync request") { json throws(JSONShapeError) in try SyncRequest(json: json)
        }
        guard sync.maxRevision >= 0 else { throw ServerError.invalidParameter("maxRevision", "0 or more") }
        if let wait = sync.wait, wait < 0 { throw ServerError.invalidParameter("wait", "0 or more seconds") }
        if let named = sync.schemaVersion, named < 1 {
            throw ServerError.invalidParameter("schemaVersion", "a whole number of 1 or more")
        }
        let version = version(sync.schemaVersion)
        let limit = try Self.limit(sync.limit, default: configuration.defaultSyncLimit, max: configuration.maxSyncLimit)
        try await checkHistory(after: sync.maxRevision, chain: sync.chain)
        if !sync.changeSets.isEmpty {
            // A client from another dataset or behind the history gets 409 or 410 before anything of its is applied.
            _ = try await store.changeFeed(after: sync.maxRevision, limit: 1, byteBudget: 0, version: version)
        }
        let results = try await push(sync.changeSets, version: version)
        let grant = RequestGrant.current.scopes
        let read = { @Sendable in
            try await store.changeFeed(
                after: sync.maxRevision, limit: limit, byteBudget: configuration.syncByteBudget, version: version,
                grant: grant)
        }
        var feed = try await read()
        if feed.changeSets.isEmpty, sync.changeSets.isEmpty, let wait = sync.wait, wait > 0,
            try await hold(after: sync.maxRevision, for: .seconds(wait))
        {
            let key = FeedRead(after: sync.maxRevision, limit: limit, version: version, grant: grant)
            feed = try await wokenReads.value(for: key, read: read)
        }
        return Self.json(
            try Self.encode(
                feed, results: sync.changeSets.isEmpty ? nil : results, scopes: readScopes()?.values,
                chains: try await chains(of: feed)))
    }

    /// Refuses a client whose history chain at `revision` is not the server's (409
    /// `history_rewritten`), or whose revision the server no longer has: it applied revisions
    /// this history does not hold. Without `chain`, nothing is checked.
    func checkHistory(after revision: Int64, chain: HistoryChain?) async throws {
        guard let chain else { return }
        let values: [Int64: HistoryChain]
        do {
            values = try await store.historyChains(at: [revision])
        } catch let error as SyncStoreError where error.code == .revisionAhead {
            throw SyncStoreError.historyRewritten(requested: revision, revision: error.revision ?? 0)
        }
        if let value = values[revision], !value.agrees(with: chain) {
            throw SyncStoreError.historyRewritten(requested: revision, revision: try await store.revisions().revision)
        }
    }

    /// The history chain at each revision of `feed`'s change sets and at its `maxRevision`.
    func chains(of feed: ChangeFeed) async throws -> [Int64: HistoryChain] {
        try await store.historyChains(at: feed.changeSets.map(\.revision) + [feed.maxRevision])
    }

    /// Live sync: holds a caught-up request until a revision after `revision` commits (true), or
    /// for `duration` capped by ``ServerConfiguration/maxWait`` (false). A graceful shutdown ends
    /// every hold at once.
    ///
    /// - Throws: 503 `too_many_waiting` when ``ServerConfiguration/maxWaitingRequests`` are held.
    func hold(after revision: Int64, for duration: Duration) async throws(ServerError) -> Bool {
        let deadline = ContinuousClock.now + min(duration, configuration.maxWait)
        let signal = signal
        let outcome = await withGracefulShutdownHandler {
            await signal.wait(after: revision, until: deadline)
        } onGracefulShutdown: {
            signal.close()
        }
        if outcome == .full { throw ServerError.tooManyWaiting(signal.capacity) }
        return outcome == .newer
    }

    /// Applies pushed change sets one by one; each is its own transaction, so a failure of
    /// storage midway leaves the first ones applied, and the client's retry (same ids) gets their
    /// recorded results.
    private func push(_ changeSets: [PushedChangeSet], version: Int) async throws -> [PushResult] {
        guard !changeSets.isEmpty else { return [] }
        guard RequestGrant.current.role >= .write else { throw ServerError.pushForbidden }
        guard changeSets.count <= configuration.maxPushedChangeSets else {
            throw ServerError(
                .contentTooLarge, code: .tooManyChangeSets,
                message:
                    "a sync request may push at most \(configuration.maxPushedChangeSets) change sets; it pushed \(changeSets.count): send the rest in the next request"
            )
        }
        var results: [PushResult] = []
        for changeSet in changeSets {
            let result = try await store.push(
                changeSet, retention: configuration.pushRetention, version: version, grant: RequestGrant.current.scopes)
            metrics.record(result)
            results.append(result)
        }
        return results
    }

    private func commit(_ request: Request) async throws -> Response {
        let body = try await request.collectBody(
            decompressingUpTo: configuration.maxRequestBodySize, within: configuration.requestBodyTimeout)
        let changeSet = try Self.parse(body, as: "change set") { json throws(JSONShapeError) in
            try ChangeSet(json: json)
        }
        guard changeSet.revision == nil else {
            throw ServerError(
                .unprocessableContent, code: .invalidChangeSet,
                message: "a submitted change set must not carry a revision; the server assigns it")
        }
        let revision = try await store.commit(changeSet)
        return Self.json(try JSONEncoder.stable().encode(CommitResponse(revision: revision)))
    }

    /// `POST /v1/admin/seeds`: records a seed so compaction keeps the history it needs.
    private func register(_ request: Request) async throws -> Response {
        let body = try await request.collectBody(
            decompressingUpTo: configuration.maxRequestBodySize, within: configuration.requestBodyTimeout)
        let registration = try Self.parse(body, as: "seed registration") { json throws(JSONShapeError) in
            let members = try JSONMembers(json, at: "")
            let given = { (name: String) in members.members[name].flatMap { $0 == .null ? nil : $0 } }
            return SeedRegistration(
                sha256: try members.string("sha256"), revision: try members.int64("revision"),
                schemaVersion: Int(try members.int64("schemaVersion")),
                scopes: given("scopes") == nil ? nil : try members.array("scopes"),
                url: given("url") == nil ? nil : try members.string("url"))
        }
        return Self.json(try JSONEncoder.stable().encode(try await store.register(registration)))
    }

    /// Reads a request body with the strict ``JSONParser`` (no duplicate members, integers apart
    /// from decimals), then as a message with `read`.
    ///
    /// - Throws: 400 `malformed_json` naming the byte offset or the member path and the reason.
    private static func parse<Message>(
        _ body: ByteBuffer, as what: String, _ read: (JSONValue) throws(JSONShapeError) -> Message
    ) throws(ServerError) -> Message {
        let json: JSONValue
        do {
            json = try body.withUnsafeReadableBytes { bytes in try JSONParser.parse(bytes) }
        } catch {
            throw ServerError.malformedJSON(what, reason: "\(error)")
        }
        do throws(JSONShapeError) {
            return try read(json)
        } catch {
            let path = error.path.isEmpty ? "the body" : error.path.clippedForMessage
            throw ServerError.malformedJSON(what, reason: "\(path): \(error.reason)")
        }
    }

    /// A `limit` parameter: absent gives `default`, values above `max` are reduced to it.
    static func limit(_ value: Int?, default defaultValue: Int, max maximum: Int) throws -> Int {
        guard let value else { return defaultValue }
        guard value >= 1 else { throw ServerError.invalidParameter("limit", "a whole number of 1 or more") }
        return min(value, maximum)
    }

    /// The answer: the feed's change sets spliced in as logged, except those this request's
    /// pushes became, which carry `__oldId__` (the temporary key) in the rows they created; with
    /// `scopes`, the scope values it was read for (a feed with gaps, see `docs/PROTOCOL.md`); with
    /// `chains`, the history chain at `maxRevision` (`chain`) and its prefix at each change set (`chains`).
    static func encode(
        _ feed: ChangeFeed, results: [PushResult]?, scopes: [JSONValue]? = nil, chains: [Int64: HistoryChain] = [:]
    ) throws -> [UInt8] {
        let marks = try OldIDMarks(results)
        var writer = JSONWriter(capacity: feed.changeSets.reduce(64) { $0 + $1.json.count + 1 })
        writer.beginObject()
        writer.key("maxRevision")
        writer.value(.int(feed.maxRevision))
        writer.key("hasMore")
        writer.value(.bool(feed.hasMore))
        writer.key("changeSets")
        writer.beginArray()
        for changeSet in feed.changeSets { writer.rawValue(try marks.json(of: changeSet)) }
        writer.endArray()
        if let results {
            writer.key("results")
            writer.beginArray()
            for result in results { writer.rawValue(result.jsonBytes()) }
            writer.endArray()
        }
        if let scopes {
            writer.key("scopes")
            writer.value(.array(scopes))
        }
        if let chain = chains[feed.maxRevision] {
            writer.key("chain")
            writer.value(.string(chain.hex))
        }
        let each = feed.changeSets.compactMap { chains[$0.revision] }
        if each.count == feed.changeSets.count {
            writer.key("chains")
            writer.value(.array(each.map { .string($0.prefix.hex) }))
        }
        writer.endObject()
        return writer.bytes
    }

    static func json(_ bytes: some Sequence<UInt8>) -> Response {
        Response(
            status: .ok,
            headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: bytes))
        )
    }
}

/// The change feed a sync request reads: requests that agree on it may share one read.
struct FeedRead: Hashable, Sendable {
    var after: Int64
    var limit: Int
    var version: Int
    var grant: ScopeGrant
    /// The last revision the read may reach: a block's end for `GET /v1/changes`.
    var through: Int64 = .max
}
