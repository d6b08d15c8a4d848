/// A request storage cannot serve. The server maps each ``code`` to a status.
///
/// Messages name revisions, types and ids, never row data beyond ids; a name or key the client
/// sent is clipped (see `String.clippedForMessage`).
public struct SyncStoreError: Error, CustomStringConvertible, Sendable {
    /// What went wrong, as the machine-readable code of the wire's error body. New codes may be
    /// added: compare with the static members, and keep a default branch.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        /// The code as the wire's error body spells it, such as `history_expired`.
        public let rawValue: String

        private init(_ rawValue: String) { self.rawValue = rawValue }

        public static let historyExpired = Self("history_expired")
        public static let revisionAhead = Self("revision_ahead")
        /// The client's history (its revision and ``HistoryChain``) is not the server's: the server
        /// lost or replaced revisions the client has applied (a restore from an older backup, a
        /// lossy crash). The client replaces its database, as for ``historyExpired``.
        public static let historyRewritten = Self("history_rewritten")
        public static let unknownType = Self("unknown_type")
        public static let invalidKey = Self("invalid_key")
        public static let invalidChangeSet = Self("invalid_change_set")
        /// The database behind the store cannot be reached now (restarting, a dropped connection);
        /// the same request may succeed later.
        public static let storeUnavailable = Self("store_unavailable")
        /// The database's tables no longer match the schema the store serves (a column added or
        /// dropped by another program); nothing is served from them until an operator acts.
        public static let schemaMismatch = Self("schema_mismatch")
        /// The client asked for a schema version the store does not keep (one newer than its
        /// newest, or none it ever had).
        public static let unknownSchemaVersion = Self("unknown_schema_version")
        /// A column download named a field its type does not have in the version asked for.
        public static let unknownField = Self("unknown_field")
        /// A seed registration is malformed, or names a seed registered with other values.
        public static let invalidRegistration = Self("invalid_registration")

        public var description: String { rawValue }
    }

    public let code: Code
    public let description: String
    /// For ``Code/historyExpired``: the oldest revision a client may sync from.
    public let minRevision: Int64?
    /// For ``Code/revisionAhead``: the store's newest revision.
    public let revision: Int64?

    private init(_ code: Code, _ description: String, minRevision: Int64? = nil, revision: Int64? = nil) {
        self.code = code
        self.description = description
        self.minRevision = minRevision
        self.revision = revision
    }

    public static func historyExpired(requested: Int64, minRevision: Int64) -> Self {
        Self(
            .historyExpired,
            "revision \(requested) is older than the change history, which starts after revision \(minRevision); download a new snapshot",
            minRevision: minRevision
        )
    }

    public static func revisionAhead(requested: Int64, revision: Int64) -> Self {
        Self(
            .revisionAhead,
            "revision \(requested) is ahead of the server's revision \(revision); the client comes from another dataset or the server was reset",
            revision: revision
        )
    }

    /// The client's chain at `requested` is not the server's; `revision` is the server's newest.
    public static func historyRewritten(requested: Int64, revision: Int64) -> Self {
        let place =
            requested > revision
            ? "the server's history ends at revision \(revision), before the client's revision \(requested)"
            : "the server's history up to revision \(requested) is not the one the client applied"
        return Self(
            .historyRewritten,
            "\(place): it was restored or lost revisions since; replace the local database with a new snapshot or seed",
            revision: revision
        )
    }

    public static func unknownType(_ name: String) -> Self {
        Self(.unknownType, "unknown type '\(name.clippedForMessage)'")
    }

    public static func invalidKey(_ text: String, type: String) -> Self {
        Self(.invalidKey, "'\(text.clippedForMessage)' is not a valid key of type \(type)")
    }

    public static func invalidChangeSet(_ error: ChangeSetError) -> Self {
        Self(.invalidChangeSet, error.description)
    }

    /// The store's database is unreachable; `detail` says which and why, without credentials.
    public static func storeUnavailable(_ detail: String) -> Self {
        Self(.storeUnavailable, "the database is unavailable (\(detail)); retry later")
    }

    public static func unknownField(_ name: String, type: String) -> Self {
        Self(.unknownField, "\(type) has no field '\(name.clippedForMessage)' in the schema version asked for")
    }

    public static func invalidRegistration(_ detail: String) -> Self {
        Self(.invalidRegistration, "cannot register the seed: \(detail)")
    }

    /// No kept version is numbered `number`; `kept` lists the ones there are.
    public static func unknownSchemaVersion(_ number: Int, kept: [Int]) -> Self {
        let list = kept.map(String.init).joined(separator: ", ")
        return Self(
            .unknownSchemaVersion,
            "schema version \(number) is not served here (versions served: \(list)); ask for one of those, or wait for the server to be upgraded"
        )
    }

    /// Version `number` is stored but cannot be read (a row changed by hand, or written by a server
    /// with a defect since fixed): the reason says why.
    public static func unreadableSchemaVersion(_ number: Int, reason: String) -> Self {
        Self(
            .unknownSchemaVersion,
            "schema version \(number) is stored but cannot be served: \(reason); the server's operator must fix or remove it (seed-server schema versions lists what is served)"
        )
    }

    /// The tables no longer match the schema; `detail` names the table and the column.
    public static func schemaMismatch(_ detail: String) -> Self {
        Self(.schemaMismatch, "the database no longer matches the served schema: \(detail)")
    }
}
