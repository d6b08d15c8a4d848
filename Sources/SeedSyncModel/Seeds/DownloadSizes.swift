/// The answer of `GET /v1/sizes` (`docs/PROTOCOL.md` §9.7): what a fresh app would download to get
/// in, by each way the server can serve, so that it takes the cheapest one.
///
/// Sizes are estimates, read from a sample: the first rows of each type, and the newest change
/// sets (exact for the revisions the sample covers). `bytes` is the JSON as the server writes it,
/// `gzipped` the same JSON compressed as the server compresses answers.
///
/// ```json
/// {"revision": 5031, "schemaVersion": 2,
///  "snapshot": {"rows": 102012, "bytes": 119800000, "gzipped": 30100000},
///  "changes": [{"after": 4000, "revisions": 1031, "bytes": 587000, "gzipped": 96000}]}
/// ```
public struct DownloadSizes: Codable, Sendable, Hashable {
    /// The newest revision when the sizes were read.
    public var revision: Int64
    /// The version the sizes are of.
    public var schemaVersion: Int
    /// Every row of the version the reader reads, as snapshot pages; `nil` when the server cannot
    /// count them now (a table locked by another session).
    public var snapshot: SnapshotSize?
    /// The change sets after each revision asked for that the history reaches, oldest first.
    public var changes: [ChangesSize]

    public init(revision: Int64, schemaVersion: Int, snapshot: SnapshotSize?, changes: [ChangesSize]) {
        self.revision = revision
        self.schemaVersion = schemaVersion
        self.snapshot = snapshot
        self.changes = changes
    }

    /// The size of a snapshot: every page of every type.
    public struct SnapshotSize: DownloadSize, Codable, Sendable, Hashable {
        public var rows: Int64
        public var bytes: Int64
        public var gzipped: Int64

        public init(rows: Int64, bytes: Int64, gzipped: Int64) {
            self.rows = rows
            self.bytes = bytes
            self.gzipped = gzipped
        }
    }

    /// The size of the change sets from `after` to ``DownloadSizes/revision``: a catch-up from there.
    public struct ChangesSize: DownloadSize, Codable, Sendable, Hashable {
        public var after: Int64
        /// The revisions after `after`: one change set each (a reader of some scope values is sent
        /// those that show it something).
        public var revisions: Int64
        public var bytes: Int64
        public var gzipped: Int64

        public init(after: Int64, revisions: Int64, bytes: Int64, gzipped: Int64) {
            self.after = after
            self.revisions = revisions
            self.bytes = bytes
            self.gzipped = gzipped
        }
    }

    /// The size of the catch-up from `revision`, when the answer has it.
    public func changes(after revision: Int64) -> ChangesSize? {
        changes.first { $0.after == revision }
    }
}

/// A size of JSON the server sends, plain (`bytes`) and as it compresses answers (`gzipped`).
public protocol DownloadSize {
    var bytes: Int64 { get }
    var gzipped: Int64 { get }
}

extension DownloadSize {
    /// The bytes on the wire for a client that takes gzip, or one that does not.
    public func onTheWire(gzipped takesGzip: Bool) -> Int64 {
        takesGzip ? gzipped : bytes
    }
}
