/// The body of `POST /v1/sync`.
///
/// ```json
/// {"maxRevision": 17382, "schemaVersion": 2, "changeSets": [], "limit": 1000, "wait": 55}
/// ```
public struct SyncRequest: JSONMessage, Sendable, Hashable {
    /// The revision the client has.
    public var maxRevision: Int64
    /// The schema version the client has: the answer's change sets are in it, and its pushed
    /// change sets are read in it. Absent, the server answers in the oldest version it serves.
    public var schemaVersion: Int?
    /// Change sets the client pushes (write-back), applied in order before the answer is read.
    public var changeSets: [PushedChangeSet]
    /// The most change sets the client wants in one answer; the server caps it.
    public var limit: Int?
    /// Live sync: seconds the server may hold the request when no change set is newer than
    /// ``maxRevision``, answering as soon as one commits (the server caps it). Absent or 0, the
    /// server answers at once. A request that pushes is always answered at once.
    public var wait: Int?
    /// The history chain at ``maxRevision`` as the client applied it (``HistoryChain``): the
    /// server answers 409 `history_rewritten` when its own differs. Absent, nothing is checked.
    public var chain: HistoryChain?

    public init(
        maxRevision: Int64, schemaVersion: Int? = nil, changeSets: [PushedChangeSet] = [], limit: Int? = nil,
        wait: Int? = nil, chain: HistoryChain? = nil
    ) {
        self.chain = chain
        self.maxRevision = maxRevision
        self.schemaVersion = schemaVersion
        self.changeSets = changeSets
        self.limit = limit
        self.wait = wait
    }

    /// Reads a request from parsed JSON (see ``JSONParser``), strictly: `maxRevision` is an
    /// integer literal (`1.0` and `1e0` are not), `changeSets` is an array when present (absent
    /// means none, `null` is an error), `limit`, `schemaVersion` and `wait` are integers when present,
    /// `chain` 64 (or 8) lower-case hex digits.
    /// Other members are ignored.
    ///
    /// ```swift
    /// let request = try SyncRequest(json: JSONParser.parse(body))
    /// ```
    ///
    /// - Throws: ``JSONShapeError`` when a member is missing or of the wrong kind.
    public init(json: JSONValue) throws(JSONShapeError) {
        let members = try JSONMembers(json, at: "")
        maxRevision = try members.int64("maxRevision")
        let given = members.members["changeSets"] == nil ? [] : try members.array("changeSets")
        changeSets = try given.enumerated().map { (index, changeSet) throws(JSONShapeError) in
            try PushedChangeSet(json: changeSet, at: "changeSets[\(index)]")
        }
        limit = members.members["limit"] == nil ? nil : Int(try members.int64("limit"))
        schemaVersion = members.members["schemaVersion"] == nil ? nil : Int(try members.int64("schemaVersion"))
        wait = members.members["wait"] == nil ? nil : Int(clamping: try members.int64("wait"))
        chain = try members.chainIfPresent("chain")
    }

    /// The request as compact JSON: `maxRevision`, `schemaVersion` when set, `changeSets` when
    /// there are any, `limit`, `wait` and `chain` when set.
    public func jsonBytes() -> [UInt8] {
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("maxRevision")
        writer.value(.int(maxRevision))
        if let schemaVersion {
            writer.key("schemaVersion")
            writer.value(.int(Int64(schemaVersion)))
        }
        if !changeSets.isEmpty {
            writer.key("changeSets")
            writer.beginArray()
            for changeSet in changeSets { writer.rawValue(changeSet.jsonBytes()) }
            writer.endArray()
        }
        if let limit {
            writer.key("limit")
            writer.value(.int(Int64(limit)))
        }
        if let wait {
            writer.key("wait")
            writer.value(.int(Int64(wait)))
        }
        if let chain {
            writer.key("chain")
            writer.value(.string(chain.hex))
        }
        writer.endObject()
        return writer.bytes
    }
}

/// The answer of `POST /v1/sync`: change sets from the client's revision on, in order, without
/// gaps (with gaps for a reader of some scope values, see ``scopes``).
public struct SyncResponse: Codable, JSONReadable, Sendable, Hashable {
    /// The revision of the last change set returned, or the request's revision when none is.
    public var maxRevision: Int64
    /// Whether the server stopped early and the client should ask again from ``maxRevision``.
    public var hasMore: Bool
    public var changeSets: [ChangeSet]
    /// What became of each pushed change set, in pushed order (absent, so empty, when none was pushed).
    public var results: [PushResult]
    /// The scope values the answer was read for, when the dataset has a scope and the token
    /// grants some of its values (absent otherwise). Such an answer leaves out the revisions that
    /// show its reader nothing: its change sets rise from the request's revision with gaps, and
    /// ``maxRevision`` is the last revision the server looked through, which may be past the last
    /// change set. A gap in it is no loss.
    public var scopes: [JSONValue]?
    /// The server's history chain at ``maxRevision`` (absent from a server that keeps none).
    public var chain: HistoryChain?
    /// The history chain at each change set's revision, in the order of ``changeSets``: its 4-byte
    /// ``HistoryChain/prefix`` (absent from a server that keeps none).
    public var chains: [HistoryChain]?

    public init(
        maxRevision: Int64, hasMore: Bool, changeSets: [ChangeSet], results: [PushResult] = [],
        scopes: [JSONValue]? = nil, chain: HistoryChain? = nil, chains: [HistoryChain]? = nil
    ) {
        self.chain = chain
        self.chains = chains
        self.maxRevision = maxRevision
        self.hasMore = hasMore
        self.changeSets = changeSets
        self.results = results
        self.scopes = scopes
    }

    /// Reads an answer from parsed JSON (see ``JSONParser``).
    ///
    /// - Throws: ``JSONShapeError`` when a member is missing or of the wrong kind.
    public init(json: JSONValue) throws(JSONShapeError) {
        let members = try JSONMembers(json, at: "")
        maxRevision = try members.int64("maxRevision")
        hasMore = try members.bool("hasMore")
        changeSets = try members.array("changeSets").enumerated().map { (index, changeSet) throws(JSONShapeError) in
            try ChangeSet(json: changeSet, at: "changeSets[\(index)]")
        }
        results = try members.arrayIfPresent("results").enumerated().map { (index, result) throws(JSONShapeError) in
            try PushResult(json: result, at: "results[\(index)]")
        }
        scopes = members.members["scopes"] == nil ? nil : try members.array("scopes")
        chain = try members.chainIfPresent("chain")
        if members.members["chains"] != nil {
            chains = try members.array("chains").enumerated().map { (index, value) throws(JSONShapeError) in
                try JSONMembers.chain(value, at: "chains[\(index)]")
            }
        }
    }
}

extension SyncResponse {
    /// The change sets a client applies for this answer, in order: its change sets, then, for an
    /// answer with gaps (``scopes``) whose ``maxRevision`` is past its last change set, an empty
    /// change set at ``maxRevision``, which moves the client's revision past the revisions that
    /// showed it nothing.
    package var changeSetsToApply: [ChangeSet] {
        guard scopes != nil, maxRevision > changeSets.last?.revision ?? .min else { return changeSets }
        return changeSets + [ChangeSet(revision: maxRevision, changes: [])]
    }

    /// The history chain at the revision of each of ``changeSetsToApply``, when the server sent them:
    /// the whole ``chain`` for the one at ``maxRevision``, the prefix of ``chains`` for the others.
    package var chainsToApply: [HistoryChain?] {
        let given = chains.flatMap { $0.count == changeSets.count ? $0 : nil }
        var values = changeSets.indices.map { index in
            changeSets[index].revision == maxRevision ? chain : given?[index]
        }
        if changeSetsToApply.count > changeSets.count { values.append(chain) }
        return values
    }
}

/// The answer of `POST /v1/admin/changes`: the revision the change set became.
public struct CommitResponse: Codable, Sendable, Hashable {
    public var revision: Int64

    public init(revision: Int64) {
        self.revision = revision
    }
}

/// The body of every error answer: `{"error": {"code": "…", "message": "…"}}`.
///
/// `history_expired` errors add `minRevision`, `revision_ahead` errors add `revision`.
public struct ErrorResponse: Codable, Sendable, Hashable {
    public struct Detail: Codable, Sendable, Hashable {
        public var code: String
        public var message: String
        public var minRevision: Int64?
        public var revision: Int64?

        public init(code: String, message: String, minRevision: Int64? = nil, revision: Int64? = nil) {
            self.code = code
            self.message = message
            self.minRevision = minRevision
            self.revision = revision
        }
    }

    public var error: Detail

    public init(error: Detail) {
        self.error = error
    }
}
