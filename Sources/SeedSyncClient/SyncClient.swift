public import Crypto
public import Foundation
public import SeedSyncModel

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A protocol v1 client: schema, snapshot pages and change feeds from one server.
///
/// Every request has a timeout and a response-size limit, failures that may pass are retried a
/// bounded number of times (see ``RetryPolicy``), and answers are checked to be the JSON the
/// protocol defines before they are returned.
///
/// ```swift
/// let client = SyncClient(configuration: .init(serverURL: url, token: token))
/// let schema = try await client.schema()
/// let feed = try await client.sync(from: 42)
/// ```
public final class SyncClient: Sendable {
    /// Where and how to talk to the server.
    public struct Configuration: Sendable {
        public var serverURL: URL
        /// Where the bearer token comes from, asked again when the server refuses it.
        public var tokens: TokenProvider
        /// Seconds a request may wait for data before it fails (and may be retried).
        public var requestTimeout: TimeInterval
        /// The largest answer accepted, decompressed: 64 MiB.
        public var maxResponseSize: Int
        public var retry: RetryPolicy
        /// Whether answers may come gzip-compressed. Off for a loopback server, where compressing
        /// costs both ends CPU and saves no bandwidth; on otherwise.
        public var acceptsGzip: Bool
        /// The origin's answer keys: when not empty, every `GET /v1/changes` answer must carry a
        /// valid signature of one of them (``AnswerSignature``), or it is refused with
        /// ``SyncClientError/Code/untrustedAnswer`` before anything of it is used. Empty (the
        /// default): answers are not checked.
        public var answerKeys: [Curve25519.Signing.PublicKey] = []

        /// A configuration with one fixed token: `nil` for an anonymous server.
        public init(
            serverURL: URL,
            token: String?,
            requestTimeout: TimeInterval = 30,
            maxResponseSize: Int = 64 << 20,
            retry: RetryPolicy = RetryPolicy(),
            acceptsGzip: Bool? = nil
        ) {
            self.init(
                serverURL: serverURL, tokens: .fixed(token), requestTimeout: requestTimeout,
                maxResponseSize: maxResponseSize, retry: retry, acceptsGzip: acceptsGzip)
        }

        /// A configuration whose token comes from `tokens`, asked again after a 401.
        public init(
            serverURL: URL,
            tokens: TokenProvider,
            requestTimeout: TimeInterval = 30,
            maxResponseSize: Int = 64 << 20,
            retry: RetryPolicy = RetryPolicy(),
            acceptsGzip: Bool? = nil
        ) {
            self.serverURL = serverURL
            self.tokens = tokens
            self.requestTimeout = requestTimeout
            self.maxResponseSize = maxResponseSize
            self.retry = retry
            self.acceptsGzip = acceptsGzip ?? !Self.isLoopback(serverURL)
        }

        /// Whether `url` names this machine: `localhost`, 127.0.0.0/8 or `::1`.
        static func isLoopback(_ url: URL) -> Bool {
            guard let host = url.host?.lowercased() else { return false }
            return host == "localhost" || host.hasPrefix("127.") || host == "::1" || host == "[::1]"
        }
    }

    public let configuration: Configuration
    let loader: BoundedLoader
    let token: TokenHolder
    /// Called before each retry with the attempt that failed, the error and the delay; for progress output.
    let onRetry: @Sendable (_ attempt: Int, _ error: SyncClientError, _ delay: Double) -> Void

    public init(
        configuration: Configuration,
        onRetry: @escaping @Sendable (_ attempt: Int, _ error: SyncClientError, _ delay: Double) -> Void = { _, _, _ in
        }
    ) {
        self.configuration = configuration
        self.onRetry = onRetry
        loader = BoundedLoader()
        token = TokenHolder(configuration.tokens)
    }

    deinit {
        loader.cancelAll()
    }

    /// Body bytes received so far, over every request of this client (after gzip decompression).
    public var bytesReceived: Int64 { loader.bytesReceived }

    /// `GET /v1/schema`: schema version `version`, or the newest the server serves when `nil`.
    ///
    /// A server answers a request that names no version in the oldest it serves (PROTOCOL.md §9),
    /// listing every version it serves: when the newest is another, it is asked for by number.
    ///
    /// - Throws: ``SyncClientError`` with ``SyncClientError/Code/unknownSchemaVersion`` when the
    ///   server does not serve `version`.
    public func schema(version: Int? = nil) async throws -> SchemaInfo {
        guard let version else {
            let info = try await schema(named: nil)
            guard let newest = info.servedVersions.last, newest != info.schemaVersion else { return info }
            return try await schema(named: newest)
        }
        return try await schema(named: version)
    }

    /// `GET /v1/schema`, naming `version` or none.
    private func schema(named version: Int?) async throws -> SchemaInfo {
        let query = version.map { [URLQueryItem(name: "version", value: String($0))] } ?? []
        let info = try await send(path: "v1/schema", query: query) { data, label in
            try Self.decode(SchemaInfo.self, from: data, label: label)
        }
        if let version, info.schemaVersion != version {
            throw SyncClientError(
                .malformedResponse, "GET /v1/schema?version=\(version) answered with version \(info.schemaVersion)")
        }
        return info
    }

    /// `GET /v1/snapshot/{type}`: up to `limit` rows after `after`, in schema version
    /// `schemaVersion` (the oldest the server serves when `nil`); with `fields`, the key, those
    /// fields and `revision` alone (a column download).
    ///
    /// A page may have been read a while ago (the server and caches keep pages for a time): it says
    /// its `revision`, and a catch-up from the oldest revision of the pages brings it forward. With
    /// `notBefore`, the page is one read at that revision or later (a client whose catch-up cannot
    /// start earlier: the history's start, or its own revision). With `scopes`, a page of a scoped
    /// type holds the rows of those scope values alone, at an address caches may share between
    /// every reader of them (the token must grant each; PROTOCOL.md §10).
    public func snapshotPage(
        of type: String, after: JSONValue?, limit: Int, schemaVersion: Int? = nil, fields: [String]? = nil,
        notBefore: Int64? = nil, scopes: ScopeList? = nil
    ) async throws -> SnapshotPage {
        SnapshotPage(
            try await flatSnapshotPage(
                of: type, after: after, limit: limit, schemaVersion: schemaVersion, fields: fields,
                notBefore: notBefore, scopes: scopes))
    }

    /// ``snapshotPage(of:after:limit:schemaVersion:fields:notBefore:scopes:)``, its rows as cells.
    package func flatSnapshotPage(
        of type: String, after: JSONValue?, limit: Int, schemaVersion: Int? = nil, fields: [String]? = nil,
        notBefore: Int64? = nil, scopes: ScopeList? = nil
    ) async throws -> FlatSnapshotPage {
        var query = [URLQueryItem(name: "limit", value: String(limit))]
        if let key = after?.keyString { query.append(URLQueryItem(name: "after", value: key)) }
        if let schemaVersion { query.append(URLQueryItem(name: "schemaVersion", value: String(schemaVersion))) }
        if let fields { query.append(URLQueryItem(name: "fields", value: fields.joined(separator: ","))) }
        if let notBefore { query.append(URLQueryItem(name: "notBefore", value: String(notBefore))) }
        if let scopes { query.append(URLQueryItem(name: "scopes", value: scopes.parameter)) }
        let page = try await send(path: "v1/snapshot/\(type)", query: query) { data, label in
            try Self.parse(data, label: label, reading: { try FlatSnapshotPage(json: $0) })
        }
        guard page.type == type else {
            throw SyncClientError(.malformedResponse, "GET /v1/snapshot/\(type) answered with a page of '\(page.type)'")
        }
        if let notBefore, page.revision < notBefore {
            throw SyncClientError(
                .malformedResponse,
                "GET /v1/snapshot/\(type)?notBefore=\(notBefore) answered with a page read at revision \(page.revision): a cache in front of the server keeps pages under an address that leaves out the query"
            )
        }
        if let fields, page.columns.count != fields.count + 2 || Set(page.columns.dropFirst().dropLast()) != Set(fields)
        {
            throw SyncClientError(
                .malformedResponse,
                "GET /v1/snapshot/\(type)?fields=\(fields.joined(separator: ",")) answered with the columns \(page.columns.joined(separator: ", "))"
            )
        }
        return page
    }

    /// `GET /v1/snapshot/{type}/uniform`: which of `fields` (of `schemaVersion`) hold one value in
    /// every row of `type`, read at `notBefore` or later (the revision the client catches up from),
    /// for `scopes` when given (`UniformFields`). `nil` from a server that does not offer it (a
    /// 404 without `unknown_type`): the client downloads the fields as columns instead.
    ///
    /// - Throws: ``SyncClientError`` `malformedResponse` for an answer of another type, a value
    ///   for a field not asked for, or one read before `notBefore` (a cache that leaves the query
    ///   out of its key).
    public func uniformFields(
        of type: String, fields: [String], schemaVersion: Int, notBefore: Int64, scopes: ScopeList? = nil
    ) async throws -> UniformFields? {
        var query = [
            URLQueryItem(name: "fields", value: fields.joined(separator: ",")),
            URLQueryItem(name: "schemaVersion", value: String(schemaVersion)),
            URLQueryItem(name: "notBefore", value: String(notBefore)),
        ]
        if let scopes { query.append(URLQueryItem(name: "scopes", value: scopes.parameter)) }
        let path = "v1/snapshot/\(type)/uniform"
        let answer: UniformFields
        do {
            answer = try await send(path: path, query: query) { data, label in
                try Self.parse(
                    data, label: label, as: { (json) throws(JSONShapeError) in try UniformFields(json: json) })
            }
        } catch let error as SyncClientError where error.status == 404 && error.serverCode != "unknown_type" {
            return nil
        }
        guard answer.type == type, answer.revision >= notBefore, Set(answer.values.keys).isSubset(of: fields) else {
            throw SyncClientError(
                .malformedResponse,
                "GET /\(path)?notBefore=\(notBefore) answered for '\(answer.type)' at revision \(answer.revision) with the fields \(answer.values.keys.sorted().joined(separator: ", ")): it is not the answer asked for (a cache in front of the server may key answers without the query)"
            )
        }
        return answer
    }

    /// `POST /v1/admin/seeds` (an admin token): records a seed so that the server's compaction
    /// keeps the history it needs to catch up.
    public func register(_ seed: SeedRegistration) async throws -> RegisteredSeed {
        let body = try JSONEncoder.stable().encode(seed)
        return try await send(path: "v1/admin/seeds", body: body) { data, label in
            try Self.decode(RegisteredSeed.self, from: data, label: label)
        }
    }

    /// `GET /v1/seeds`: the registered seeds.
    public func registeredSeeds() async throws -> [RegisteredSeed] {
        try await send(path: "v1/seeds") { data, label in try Self.decode(SeedList.self, from: data, label: label) }
            .seeds
    }

    /// `GET /v1/sizes`: what a snapshot of `schemaVersion`, and a catch-up from each of
    /// `revisions` (eight at most), would download, as the server estimates them for this token.
    ///
    /// - Throws: ``SyncClientError`` `notFound` from a server that predates the endpoint.
    public func sizes(after revisions: [Int64], schemaVersion: Int) async throws -> DownloadSizes {
        var query = [URLQueryItem(name: "schemaVersion", value: String(schemaVersion))]
        if !revisions.isEmpty {
            query.append(URLQueryItem(name: "after", value: revisions.map(String.init).joined(separator: ",")))
        }
        return try await send(path: "v1/sizes", query: query) { data, label in
            try Self.decode(DownloadSizes.self, from: data, label: label)
        }
    }

    /// `POST /v1/sync` from `revision`, pushing `changeSets` (write-back) first, in schema version
    /// `schemaVersion` (the oldest the server serves when `nil`): the change sets come in it, and
    /// the pushed ones are read in it.
    ///
    /// A push is retried like any request: the server applies a change set once per id and
    /// answers a retry with the first result.
    ///
    /// With `wait` (seconds), a client that is caught up asks the server to hold the request until
    /// a newer revision commits (live sync): the answer comes as soon as one does, or with no
    /// change set when the wait (capped by the server) ends. The request's timeout grows by `wait`.
    ///
    /// With `chain`, the history chain the client keeps for `revision` (the `chain` of the answer
    /// that brought it), the server checks that its history is still the one the client applied.
    ///
    /// ```swift
    /// var answer = try await client.sync(from: revision)
    /// answer = try await client.sync(from: answer.maxRevision, chain: answer.chain, wait: 55)  // at the next commit
    /// ```
    ///
    /// - Throws: ``SyncClientError`` with ``SyncClientError/Code/historyExpired`` (and
    ///   `minRevision`) or ``SyncClientError/Code/revisionAhead`` when the server cannot serve
    ///   from `revision`, ``SyncClientError/Code/historyRewritten`` when its history at `revision`
    ///   is not `chain`, ``SyncClientError/Code/forbidden`` when the token may not push;
    ///   ``SyncClientError/Code/malformedResponse`` when the change sets do not follow on from
    ///   `revision` without gaps, `hasMore` comes without any, or the results do not answer the
    ///   pushed change sets one by one.
    public func sync(
        from revision: Int64, chain: HistoryChain? = nil, limit: Int? = nil, pushing changeSets: [PushedChangeSet] = [],
        schemaVersion: Int? = nil, wait: Int? = nil
    ) async throws -> SyncResponse {
        let request = SyncRequest(
            maxRevision: revision, schemaVersion: schemaVersion, changeSets: changeSets, limit: limit, wait: wait,
            chain: chain)
        let body = Data(request.jsonBytes())
        let response = try await send(path: "v1/sync", body: body, holdFor: wait ?? 0) { data, label in
            try Self.parse(data, label: label, as: SyncResponse.init(json:))
        }
        guard response.results.map(\.id) == changeSets.map(\.id) else {
            throw SyncClientError(
                .malformedResponse,
                "POST /v1/sync: \(changeSets.count) change sets were pushed, but the results answer \(response.results.count) or other ids"
            )
        }
        for (pushed, result) in zip(changeSets, response.results) { try Self.checkKeys(of: result, answering: pushed) }
        try Self.checkChangeSets(of: response, from: revision, label: "POST /v1/sync")
        return response
    }

    /// `GET /v1/changes` from `revision`, in schema version `schemaVersion`: the change log as a
    /// read that HTTP caches keep. The server ends the answer at the end of `revision`'s block of
    /// revisions (or sooner at `limit`); `hasMore` says the answer is final and the log goes on
    /// from its `maxRevision`; an answer without it is the head, after which a client continues
    /// with ``sync(from:chain:limit:pushing:schemaVersion:wait:)``. See `docs/PROTOCOL.md`. With `chain`,
    /// the origin checks the history as ``sync(from:chain:limit:pushing:schemaVersion:wait:)`` does (a
    /// cache that answers from its store does not).
    ///
    /// With `scopes` (a reader of some scope values names its values, as `GET /v1/schema` lists
    /// them), the answer is the log as those values see it, with gaps (its `scopes` says them),
    /// at an address caches may share between every reader of them; an answer for other values is
    /// refused.
    ///
    /// ```swift
    /// var answer = try await client.changes(after: seedRevision, schemaVersion: 1)
    /// while answer.hasMore { answer = try await client.changes(after: answer.maxRevision, schemaVersion: 1) }
    /// ```
    ///
    /// - Throws: ``SyncClientError`` as ``sync(from:chain:limit:pushing:schemaVersion:wait:)`` does;
    ///   `serverError` with status 404 from a server that predates `GET /v1/changes`.
    public func changes(
        after revision: Int64, chain: HistoryChain? = nil, schemaVersion: Int, limit: Int? = nil,
        scopes: ScopeList? = nil
    ) async throws -> SyncResponse {
        try await readLog(
            after: revision, chain: chain, schemaVersion: schemaVersion, limit: limit, scopes: scopes, live: nil
        ).response
    }

    /// A live read (`GET /v1/changes` with `live`) from `revision`, where a client that is caught
    /// up waits for the next commit through HTTP caches: the server holds the read until a later
    /// revision commits (or its live wait, 20 s by default, ends) and answers every client at
    /// `revision` with the same bytes, so a cache in front of it sends the origin one request for
    /// all of them. Pass `LiveCursor.start` first, then the answer's ``LiveAnswer/cursor``.
    /// The request's timeout grows by `wait` seconds, which should exceed the server's live wait.
    ///
    /// An answer with no ``LiveAnswer/cursor`` comes from a server that does not hold live reads
    /// (it answered at once): wait with ``sync(from:chain:limit:pushing:schemaVersion:wait:)`` instead.
    ///
    /// ```swift
    /// var cursor = LiveCursor.start
    /// while true {
    ///     let answer = try await client.liveChanges(after: revision, schemaVersion: 1, cursor: cursor)
    ///     guard let next = answer.cursor else { break }  // no live reads: POST /v1/sync with wait
    ///     (revision, cursor) = (answer.response.maxRevision, next)
    /// }
    /// ```
    ///
    /// - Throws: ``SyncClientError`` as ``changes(after:chain:schemaVersion:limit:scopes:)`` does.
    public func liveChanges(
        after revision: Int64, chain: HistoryChain? = nil, schemaVersion: Int, cursor: LiveCursor,
        scopes: ScopeList? = nil, wait: Int = 60
    ) async throws -> LiveAnswer {
        try await readLog(
            after: revision, chain: chain, schemaVersion: schemaVersion, limit: nil, scopes: scopes,
            live: (cursor, wait))
    }

    /// `GET /v1/changes`, live when `live` gives a cursor and the seconds the server may hold it.
    private func readLog(
        after revision: Int64, chain: HistoryChain?, schemaVersion: Int, limit: Int?, scopes: ScopeList?,
        live: (cursor: LiveCursor, wait: Int)?
    ) async throws -> LiveAnswer {
        var query = [
            URLQueryItem(name: "after", value: String(revision)),
            URLQueryItem(name: "schemaVersion", value: String(schemaVersion)),
        ]
        if let chain { query.append(URLQueryItem(name: "chain", value: chain.hex)) }
        if let limit { query.append(URLQueryItem(name: "limit", value: String(limit))) }
        if let scopes { query.append(URLQueryItem(name: "scopes", value: scopes.parameter)) }
        if let live { query.append(URLQueryItem(name: "live", value: live.cursor.description)) }
        let address = AnswerSignature.address(
            after: revision, schemaVersion: schemaVersion, limit: limit, scopes: scopes)
        let keys = configuration.answerKeys
        let cursor = LockedValue<LiveCursor?>(nil)
        let response = try await send(
            path: "v1/changes", query: query, holdFor: live?.wait ?? 0,
            verify: { response, data, label in
                if !keys.isEmpty {
                    try AnswerSignature.check(
                        response.value(forHTTPHeaderField: AnswerSignature.headerName), of: data, at: address,
                        keys: keys, label: "\(label)?\(address)")
                }
                cursor.set(response.value(forHTTPHeaderField: LiveCursor.headerName).flatMap(LiveCursor.init(header:)))
            }
        ) { data, label in
            try Self.parse(data, label: label, as: SyncResponse.init(json:))
        }
        if let scopes, response.scopes.map(ScopeList.init) != scopes {
            throw SyncClientError(
                .malformedResponse,
                "GET /v1/changes?scopes=\(scopes.parameter) answered for scope values \(response.scopes.map { ScopeList($0).description } ?? "(every one)"): a cache in front of the server keeps answers under an address that leaves out the query"
            )
        }
        try Self.checkChangeSets(of: response, from: revision, label: "GET /v1/changes")
        return LiveAnswer(response: response, cursor: live == nil ? nil : cursor.get())
    }

    /// The change sets of an answer follow on from `revision` without gaps, `hasMore` comes with
    /// some, and `maxRevision` is the last one's. An answer read for some scope values
    /// (``SyncResponse/scopes``) may leave gaps: its change sets rise after `revision` up to its
    /// `maxRevision`, and one with `hasMore` moves past `revision`.
    ///
    /// - Throws: ``SyncClientError/Code/malformedResponse`` saying which rule the answer breaks.
    private static func checkChangeSets(of response: SyncResponse, from revision: Int64, label: String) throws {
        if let chains = response.chains, chains.count != response.changeSets.count {
            throw SyncClientError(
                .malformedResponse,
                "\(label) from revision \(revision): \(chains.count) history chains for \(response.changeSets.count) change sets"
            )
        }
        if response.scopes != nil { return try checkScopedChangeSets(of: response, from: revision, label: label) }
        // `nil` past Int64.max: no change set can follow it.
        var next: Int64? = revision < .max ? revision + 1 : nil
        for changeSet in response.changeSets {
            guard let expected = next, changeSet.revision == expected else {
                throw SyncClientError(
                    .malformedResponse,
                    "\(label) from revision \(revision): expected change set \(next.map(String.init) ?? "none (the last revision there is was reached)"), got \(changeSet.revision.map(String.init) ?? "one without a revision")"
                )
            }
            next = expected < .max ? expected + 1 : nil
        }
        guard !response.hasMore || !response.changeSets.isEmpty else {
            throw SyncClientError(
                .malformedResponse, "\(label) from revision \(revision): hasMore is true but no change set came")
        }
        guard response.maxRevision == response.changeSets.last?.revision ?? revision else {
            throw SyncClientError(
                .malformedResponse,
                "\(label) from revision \(revision): maxRevision \(response.maxRevision) does not match the change sets returned"
            )
        }
    }

    /// ``checkChangeSets(of:from:label:)`` for an answer with gaps.
    private static func checkScopedChangeSets(of response: SyncResponse, from revision: Int64, label: String) throws {
        var last = revision
        for changeSet in response.changeSets {
            guard let given = changeSet.revision, given > last, given <= response.maxRevision else {
                throw SyncClientError(
                    .malformedResponse,
                    "\(label) from revision \(revision): change set \(changeSet.revision.map(String.init) ?? "without a revision") does not rise after \(last) within maxRevision \(response.maxRevision)"
                )
            }
            last = given
        }
        guard response.maxRevision >= revision, !response.hasMore || response.maxRevision > revision else {
            throw SyncClientError(
                .malformedResponse,
                "\(label) from revision \(revision): maxRevision \(response.maxRevision) does not move past it\(response.hasMore ? " though hasMore is true" : "")"
            )
        }
    }

    /// Sends a request, retrying what may pass, and reads a 200 answer with `read`, after `verify`.
    /// `holdFor`: seconds the server may hold the request before it answers (live sync), added to
    /// the request's timeout.
    private func send<T>(
        path: String, query: [URLQueryItem] = [], body: Data? = nil, holdFor: Int = 0,
        verify: ((HTTPURLResponse, Data, _ label: String) throws -> Void)? = nil,
        read: (Data, _ label: String) throws -> T
    ) async throws -> T {
        var request = try makeRequest(path: path, query: query, body: body)
        request.timeoutInterval += TimeInterval(max(0, holdFor))
        let label = "\(body == nil ? "GET" : "POST") /\(path)"
        var sent = try await token(for: label)
        var renewed = false
        var attempt = 1
        while true {
            do {
                request.setValue(sent.map { "Bearer \($0)" }, forHTTPHeaderField: "Authorization")
                let (response, data) = try await load(request, label: label)
                try checkStatus(of: response, body: data, label: label)
                try verify?(response, data, label)
                return try read(data, label)
            } catch let error as SyncClientError where error.code == .unauthorized && !renewed {
                renewed = true
                guard let renewal = try await renewedToken(refused: sent, label: label) else { throw error }
                sent = renewal
            } catch let error as SyncClientError
                where Self.isRetryable(error) && attempt < configuration.retry.maxAttempts
            {
                let delay = configuration.retry.delay(afterAttempt: attempt, retryAfter: error.retryAfter)
                onRetry(attempt, error, delay)
                try await Task.sleep(nanoseconds: UInt64(delay * 1_000_000_000))
                attempt += 1
            }
        }
    }

    private func makeRequest(path: String, query: [URLQueryItem], body: Data?) throws -> URLRequest {
        var components = URLComponents(
            url: configuration.serverURL.appendingPathComponent(path), resolvingAgainstBaseURL: false)
        if !query.isEmpty { components?.queryItems = query }
        guard let url = components?.url else {
            throw SyncClientError(.unreachable, "invalid server URL \(configuration.serverURL)")
        }
        var request = URLRequest(url: url, timeoutInterval: configuration.requestTimeout)
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        request.setValue(configuration.acceptsGzip ? "gzip" : "identity", forHTTPHeaderField: "Accept-Encoding")
        if let body {
            request.httpMethod = "POST"
            request.httpBody = body
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        return request
    }

    /// The token to send, from the provider.
    func token(for label: String) async throws -> String? {
        do {
            return try await token.token()
        } catch {
            throw SyncClientError(.unauthorized, "\(label): the token provider gave no token: \(error)")
        }
    }

    /// A token to send instead of `refused`, or `nil` when the provider has no other.
    private func renewedToken(refused: String?, label: String) async throws -> String?? {
        do {
            return try await token.renew(refused: refused)
        } catch {
            throw SyncClientError(
                .unauthorized,
                "\(label): the server refused the token, and the token provider gave no new one: \(error)")
        }
    }

    /// The answer to `request`, at most `limit` bytes (the configuration's `maxResponseSize` by default).
    func load(_ request: URLRequest, limit: Int? = nil, label: String) async throws -> (HTTPURLResponse, Data) {
        do {
            return try await loader.load(request, limit: limit ?? configuration.maxResponseSize)
        } catch BoundedLoader.Failure.tooLarge(let limit) {
            throw SyncClientError(
                .responseTooLarge, "\(label): the answer is larger than the client's limit of \(limit) bytes")
        } catch BoundedLoader.Failure.transport(let error) {
            let reason =
                error.code == .timedOut
                ? "no answer within \(Int(configuration.requestTimeout)) s" : error.localizedDescription
            throw SyncClientError(
                .unreachable, "\(label): cannot reach \(configuration.serverURL.absoluteString): \(reason)")
        }
    }
}

extension SyncClient {
    /// An `applied` result must give a real key to each temporary key its change set created, and to
    /// no other: a row left under its temporary key would stay beside the server's copy of it for good.
    ///
    /// - Throws: ``SyncClientError/Code/malformedResponse`` naming the change set and the keys.
    static func checkKeys(of result: PushResult, answering pushed: PushedChangeSet) throws {
        guard case .applied(_, let keys) = result.status else { return }
        var created: [String: Set<String>] = [:]
        for changes in pushed.changeSet.changes {
            let temporary = changes.create.compactMap { key in key.intValue.flatMap { $0 < 0 ? String($0) : nil } }
            if !temporary.isEmpty { created[changes.type] = Set(temporary) }
        }
        let given = keys.compactMapValues { map in map.isEmpty ? nil : Set(map.keys) }
        let realKeys = keys.values.flatMap(\.values)
        guard given == created, realKeys.allSatisfy({ $0.intValue != nil }) else {
            throw SyncClientError(
                .malformedResponse,
                "POST /v1/sync: the result of pushed change set \(pushed.id) maps the temporary keys \(describe(given)), but the change set created \(describe(created))"
            )
        }
    }

    private static func describe(_ keys: [String: Set<String>]) -> String {
        keys.isEmpty
            ? "none"
            : keys.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value.sorted().joined(separator: ", "))" }.joined(
                separator: "; ")
    }
}
