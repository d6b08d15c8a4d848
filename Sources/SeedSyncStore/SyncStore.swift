public import SeedSyncModel

/// The storage a sync server runs on.
///
/// The server target talks to storage through this protocol alone, so the embedded SQLite store
/// and a PostgreSQL store are interchangeable. Every implementation keeps these rules:
///
/// 1. Revisions are assigned in commit order, one per change set: a reader never sees revision
///    r+1 while r is uncommitted.
/// 2. The change log holds every revision from `minRevision + 1` to `revision`, without gaps.
/// 3. Each read (schema, snapshot page, change feed) sees one committed state.
///
/// Reads and pushes take the reader's `ScopeGrant`: in a dataset with a scope
/// (`DatasetSchema.scope`), a reader with a grant of some scope values sees the rows of those
/// values and every shared row, and writes those values' rows alone. The change log is one log of
/// global revisions; ``changeFeed(after:limit:byteBudget:version:grant:through:)`` shows each
/// change set as `ChangeSet.visible(to:in:)` makes it, the same for every store.
public protocol SyncStore: Sendable {
    /// Every schema version the store serves, oldest first (see `SchemaHistory`).
    func schemaHistory() async throws -> SchemaHistory

    /// The schema of `version` (the newest when `nil`) with the newest revision, the oldest revision
    /// the change log can serve from, the row counts of the version's types and the versions served.
    ///
    /// The row counts are of the rows `grant` reads.
    ///
    /// - Throws: `SyncStoreError.unknownSchemaVersion(_:kept:)` for a version the store lacks.
    func schemaInfo(version: Int?, grant: ScopeGrant) async throws -> SchemaInfo

    /// The newest revision and the oldest one the change log can serve from, without counting
    /// rows: cheap enough for a metrics scrape.
    func revisions() async throws -> (revision: Int64, minRevision: Int64)

    /// Up to `limit` current rows of `type` whose key is greater than `after`, in key order, as
    /// the JSON of `SnapshotPage.jsonBytes()`, in schema version `version` (the newest when `nil`;
    /// see `VersionProjection`); with `fields`, the key, those fields (in schema order) and
    /// `revision` alone: the column download of a client migrating to the version. A page of a
    /// scoped type holds the rows of `grant`'s scope values alone.
    ///
    /// - Throws: `SyncStoreError.unknownType(_:)` for a type the version lacks,
    ///   `SyncStoreError.unknownField(_:type:)` for a field it lacks,
    ///   `SyncStoreError.unknownSchemaVersion(_:kept:)` for a version the store lacks.
    func snapshotPageJSON(
        of type: String, after: JSONValue?, limit: Int, version: Int?, fields: [String]?, grant: ScopeGrant
    ) async throws -> [UInt8]

    /// Which of `fields` of `type` (names of schema version `version`, the newest when `nil`) hold
    /// one value in every current row `grant` reads, with that value, read in one transaction at
    /// the revision the answer says: what a client migrating to the version fills in locally
    /// instead of downloading (`UniformFields`). A field whose rows differ is left out; a type with
    /// no rows lists every field with its absent value. Values are compared as stored, so two that
    /// read the same on the wire but are stored differently count as different: a field is never
    /// listed when it is not uniform.
    ///
    /// - Throws: as ``snapshotPageJSON(of:after:limit:version:fields:grant:)``.
    func uniformFields(of type: String, fields: [String], version: Int?, grant: ScopeGrant) async throws
        -> UniformFields

    /// The change sets after `revision`, in order, in schema version `version` (the newest when
    /// `nil`): at most `limit`, and no more than `byteBudget` bytes of JSON unless a single change
    /// set is larger (one is always returned when any exists).
    ///
    /// - Throws: `SyncStoreError.historyExpired(requested:minRevision:)` when `revision` is
    ///   older than `minRevision`, `SyncStoreError.revisionAhead(requested:revision:)` when it
    ///   is newer than the store, `SyncStoreError.unknownSchemaVersion(_:kept:)`.
    func changeFeed(after revision: Int64, limit: Int, byteBudget: Int, version: Int?) async throws -> ChangeFeed

    /// The history chain (`HistoryChain`, `docs/PROTOCOL.md` §11) at each of `revisions` that the
    /// log reaches, computed first where missing (see `HistoryLedger`). A revision below the log's
    /// `minRevision` may have no value.
    ///
    /// - Throws: `SyncStoreError.revisionAhead(requested:revision:)` when one of `revisions` is
    ///   newer than the store.
    func historyChains(at revisions: [Int64]) async throws -> [Int64: HistoryChain]

    /// The change feed as a reader granted `grant` sees it (PROTOCOL.md §10), looking through
    /// revisions up to `last` at most: each change set made `ChangeSet.visible(to:in:)`, those that
    /// show it nothing left out, `maxRevision` the last revision looked through. The default,
    /// ``scannedChangeFeed(after:limit:byteBudget:version:grant:through:)``, reads the whole log; a
    /// store with an index of its log by scope value reads the change sets of the grant alone.
    ///
    /// - Throws: as ``changeFeed(after:limit:byteBudget:version:)``.
    func changeFeed(
        after revision: Int64, limit: Int, byteBudget: Int, version: Int?, grant: ScopeGrant, through last: Int64
    ) async throws -> ChangeFeed

    /// Validates `changeSet` against the newest version and commits it atomically as the next revision.
    ///
    /// - Returns: the revision assigned.
    /// - Throws: `SyncStoreError.invalidChangeSet(_:)` when it does not fit the schema or the
    ///   data (unknown row, duplicate row, dangling reference); nothing is written then.
    @discardableResult
    func commit(_ changeSet: ChangeSet) async throws -> Int64

    /// Applies a change set a client of schema version `version` (the newest when `nil`) pushed,
    /// once: checked against that version's schema (`DatasetSchema/validatePush(_:)`), turned into
    /// the newest (`VersionProjection`: fields the client does not know keep their stored values)
    /// and checked against the revisions its author saw, then committed atomically as the next
    /// revision with its temporary keys replaced by real ones; or, with nothing written, answered
    /// as a conflict (the current state of the rows it touched, in `version`) or a rejection. The
    /// result is stored under the change set's id in the same transaction, and a push of an id
    /// already seen returns that result and writes nothing. Results older than `retention` are forgotten.
    ///
    /// With `grant`, a row of a scoped type outside its values is one the pusher cannot know of:
    /// updating, deleting or referencing one answers as for a missing row; creating a row of
    /// another value, or moving one to it, is rejected; a conflict answer shows no row outside it.
    ///
    /// - Returns: the result; conflicts and rejections are results, not errors.
    /// - Throws: only when storage fails (`storeUnavailable`, or the store's own errors); nothing
    ///   is written or recorded then, and the push can be sent again.
    func push(_ changeSet: PushedChangeSet, retention: Duration, version: Int?, grant: ScopeGrant) async throws
        -> PushResult

    /// Records a seed a team ships: until it is retired, compaction keeps every change set after
    /// its revision, so it can always catch up. Registering the same seed again returns the first
    /// record.
    ///
    /// - Throws: `SyncStoreError` `historyExpired` when the history no longer reaches its
    ///   revision, `revisionAhead` past the store's, `unknownSchemaVersion` for a version the store
    ///   does not serve, `invalidRegistration` for a malformed SHA-256 or one registered with
    ///   another revision or version.
    func register(_ seed: SeedRegistration) async throws -> RegisteredSeed

    /// Every registered seed, retired ones too, oldest revision first.
    func registeredSeeds() async throws -> [RegisteredSeed]

    /// Reports the newest committed revision to `onRevision`, once when it starts and again each
    /// time a commit raises it, whoever committed (this process, another one on the same store, a
    /// psql session on PostgreSQL), until the calling task is cancelled. Live sync rests on it: a
    /// server runs one watch and wakes every held request from it, so a commit costs one read
    /// however many clients wait. Reports may repeat a revision or skip some; they never go back
    /// unless the store does. A store that cannot be read for a while is watched again when it can.
    ///
    /// ```swift
    /// let watch = Task { await store.watchRevisions { revision in signal.publish(revision) } }
    /// ```
    func watchRevisions(_ onRevision: @escaping @Sendable (Int64) -> Void) async
}

extension SyncStore {
    /// ``historyChains(at:)`` of `first` through `last`.
    public func historyChains(from first: Int64, through last: Int64) async throws -> [Int64: HistoryChain] {
        guard first <= last else { return [:] }
        return try await historyChains(at: Array(first...last))
    }

    /// Reads `revisions()` four times a second: a store with no notification of its own still
    /// serves live sync, with up to a quarter of a second of delay.
    public func watchRevisions(_ onRevision: @escaping @Sendable (Int64) -> Void) async {
        await pollRevisions(every: .milliseconds(250), onRevision)
    }

    /// `watchRevisions(_:)` by reading `revisions()` every `interval`: for stores with no
    /// notification of their own, and as the fallback of those that have one. A failed read is
    /// tried again at the next tick.
    public func pollRevisions(every interval: Duration, _ onRevision: @escaping @Sendable (Int64) -> Void) async {
        while !Task.isCancelled {
            if let revisions = try? await revisions() { onRevision(revisions.revision) }
            try? await Task.sleep(for: interval)
        }
    }

    /// The newest version's schema information.
    public func schemaInfo() async throws -> SchemaInfo {
        try await schemaInfo(version: nil, grant: .all)
    }

    /// The schema information of `version`, every row counted.
    public func schemaInfo(version: Int?) async throws -> SchemaInfo {
        try await schemaInfo(version: version, grant: .all)
    }

    /// A page of every row, whatever its scope.
    public func snapshotPageJSON(of type: String, after: JSONValue?, limit: Int, version: Int?, fields: [String]?)
        async throws -> [UInt8]
    {
        try await snapshotPageJSON(of: type, after: after, limit: limit, version: version, fields: fields, grant: .all)
    }

    /// A push of a writer granted every scope value.
    public func push(_ changeSet: PushedChangeSet, retention: Duration, version: Int?) async throws -> PushResult {
        try await push(changeSet, retention: retention, version: version, grant: .all)
    }

    /// The revisions of `schemaInfo()`; stores override it with a read that skips the row counts.
    public func revisions() async throws -> (revision: Int64, minRevision: Int64) {
        let info = try await schemaInfo()
        return (info.revision, info.minRevision)
    }

    /// A page of `snapshotPageJSON(of:after:limit:version:fields:)`, parsed: one mapping from stored
    /// values to wire values, so the two can never disagree.
    public func snapshotPage(
        of type: String, after: JSONValue?, limit: Int, version: Int? = nil, fields: [String]? = nil,
        grant: ScopeGrant = .all
    ) async throws -> SnapshotPage {
        let json = try await snapshotPageJSON(
            of: type, after: after, limit: limit, version: version, fields: fields, grant: grant)
        return try SnapshotPage(json: JSONParser.parse(json))
    }

    /// A page in the newest version, every field.
    public func snapshotPageJSON(of type: String, after: JSONValue?, limit: Int) async throws -> [UInt8] {
        try await snapshotPageJSON(of: type, after: after, limit: limit, version: nil, fields: nil)
    }

    /// Change sets in the newest version.
    public func changeFeed(after revision: Int64, limit: Int, byteBudget: Int) async throws -> ChangeFeed {
        try await changeFeed(after: revision, limit: limit, byteBudget: byteBudget, version: nil)
    }

    /// A push of a client of the newest version.
    public func push(_ changeSet: PushedChangeSet, retention: Duration) async throws -> PushResult {
        try await push(changeSet, retention: retention, version: nil)
    }
}

/// Change sets as the log stores them: already encoded, ready to splice into a response.
public struct ChangeFeed: Sendable {
    /// The revision of the last change set, or the requested revision when there are none.
    public var maxRevision: Int64
    /// Whether newer change sets exist than the ones returned.
    public var hasMore: Bool
    public var changeSets: [EncodedChangeSet]

    public init(maxRevision: Int64, hasMore: Bool, changeSets: [EncodedChangeSet]) {
        self.maxRevision = maxRevision
        self.hasMore = hasMore
        self.changeSets = changeSets
    }
}

extension ChangeFeed {
    /// Collects the change sets of a feed, consecutive from `after + 1`, within a byte budget:
    /// the rule of ``SyncStore/changeFeed(after:limit:byteBudget:)`` in one place.
    ///
    /// ```swift
    /// var builder = ChangeFeed.Builder(after: 41, byteBudget: 1 << 20)
    /// for changeSet in logged where !builder.append(changeSet) { break }
    /// return builder.feed(newest: 57)
    /// ```
    package struct Builder: Sendable {
        /// The revision of the last change set added, or `after` when there is none yet.
        package private(set) var revision: Int64
        package private(set) var changeSets: [EncodedChangeSet] = []
        /// Whether the budget is spent: a change set did not fit.
        package private(set) var isFull = false
        private var bytes = 0
        private let byteBudget: Int

        package init(after revision: Int64, byteBudget: Int) {
            self.revision = revision
            self.byteBudget = byteBudget
        }

        /// Adds the next change set (the log's `revision + 1`) unless it would overrun the budget;
        /// the first always fits.
        ///
        /// - Returns: whether it was added; once one did not fit, none is.
        package mutating func append(_ changeSet: EncodedChangeSet) -> Bool {
            guard !isFull, changeSets.isEmpty || bytes + changeSet.json.count <= byteBudget else {
                isFull = true
                return false
            }
            bytes += changeSet.json.count
            changeSets.append(changeSet)
            revision = changeSet.revision
            return true
        }

        /// The feed of the change sets added, in a store whose newest revision is `newest`.
        package func feed(newest: Int64) -> ChangeFeed {
            ChangeFeed(maxRevision: revision, hasMore: revision < newest, changeSets: changeSets)
        }
    }
}

/// One logged change set: its revision and its JSON text (UTF-8).
public struct EncodedChangeSet: Sendable, Hashable {
    public var revision: Int64
    public var json: [UInt8]

    public init(revision: Int64, json: [UInt8]) {
        self.revision = revision
        self.json = json
    }
}
