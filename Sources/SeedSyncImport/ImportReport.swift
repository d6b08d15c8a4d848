import Foundation

/// The outcome of one ``SeedImporter/run()``: `seed-import --json` prints it.
///
/// ```json
/// {"database": "app/events.sqlite", "installed": true, "replacements": [],
///  "fromRevision": 1300, "toRevision": 6300, "changeSets": 5000,
///  "inserted": 1650, "updated": 2480, "deleted": 870, "seconds": 1.9,
///  "pushed": 2, "conflicts": 1, "rejected": 0, "pending": 0}
/// ```
///
/// Row counts are as the change sets name them: a create of a row already there counts as inserted.
public struct ImportReport: Sendable, Hashable, Codable {
    public var database: String
    /// Whether the seed was installed because there was no database.
    public var installed: Bool
    /// Where the installed database came from, when the run installed one.
    public var installedFrom: InstallSource?
    /// The ways a fresh app weighed to get in, by their bytes, and the one it took, when it
    /// weighed them (a server to ask, no ``SeedImporter/Configuration/seedURL``).
    public var wayIn: WayIn?
    /// Whole-database replacements: a newer seed, or recovery from an expired history.
    public var replacements: [Replacement]
    /// The revision the sync started from (the seed's after an install).
    public var fromRevision: Int64
    /// The revision the database is at now.
    public var toRevision: Int64
    public var changeSets: Int
    public var inserted: Int
    public var updated: Int
    public var deleted: Int
    public var seconds: Double
    /// Local change sets the server applied, answered with a conflict, or that were rejected
    /// (see ``ImportEvent``), and those still waiting in the outbox when the run ended.
    public var pushed: Int
    public var conflicts: Int
    public var rejected: Int
    public var pending: Int
    /// Why the shipped seed was not used although it is newer, when that happened (see
    /// ``ImportEvent/seedRejected(reason:)``); the database was kept and synced. Also why the seed
    /// the server offered was not used, and a snapshot installed instead.
    public var seedProblem: String?
    /// The schema version the database is in at the end of the run.
    public var schemaVersion: Int?
    /// The migration of the database to a newer schema version, when the run made one.
    public var migration: Migration?
    /// The schema version the app expects (``SeedImporter/Configuration/expectedSchemaVersion``)
    /// when the server does not serve it (yet): the database stays in ``schemaVersion``, and a
    /// later run migrates once the server serves it.
    public var expectedVersionNotServed: Int?

    init(database: String) {
        self.database = database
        installed = false
        replacements = []
        fromRevision = 0
        toRevision = 0
        changeSets = 0
        inserted = 0
        updated = 0
        deleted = 0
        seconds = 0
        pushed = 0
        conflicts = 0
        rejected = 0
        pending = 0
    }
}

/// A database moved to a newer schema version in place (see ``ImportEvent/migrated(_:)``).
public struct Migration: Sendable, Hashable, Codable {
    public var fromVersion: Int
    public var toVersion: Int
    /// The database's revision when it started; the staged change sets took it further.
    public var fromRevision: Int64
    public var toRevision: Int64
    /// What changed, as `SchemaChange` describes it: `events.notes added`, `type venues added`.
    public var changes: [String]
    /// Rows downloaded: the new types' rows and the rows of the new columns.
    public var rowsDownloaded: Int
    /// Bytes received for the downloads and the change sets.
    public var bytesDownloaded: Int64
    /// The new fields the server said hold one value in every row (`events.notes`), filled in
    /// locally instead of downloaded (`UniformFields`); in name order.
    public var fieldsFilled: [String]

    public init(
        fromVersion: Int, toVersion: Int, fromRevision: Int64, toRevision: Int64, changes: [String],
        rowsDownloaded: Int, bytesDownloaded: Int64, fieldsFilled: [String] = []
    ) {
        self.fieldsFilled = fieldsFilled
        self.fromVersion = fromVersion
        self.toVersion = toVersion
        self.fromRevision = fromRevision
        self.toRevision = toRevision
        self.changes = changes
        self.rowsDownloaded = rowsDownloaded
        self.bytesDownloaded = bytesDownloaded
    }
}

/// Where an installed database came from (``ImportReport/installedFrom``): a shipped seed, a
/// published one, or a snapshot of the server.
///
/// ```json
/// {"kind": "published-seed", "location": "https://cdn.example.com/seeds/events.sqlite.gz"}
/// ```
public struct InstallSource: Sendable, Hashable, Codable {
    /// What kind of source; new kinds may be added.
    public struct Kind: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The seed the app ships (``SeedImporter/Configuration/seed``).
        public static let shippedSeed = Kind(rawValue: "shipped-seed")
        /// A seed downloaded from where it is published (``SeedImporter/Configuration/seedURL``,
        /// or the newest the server offers).
        public static let publishedSeed = Kind(rawValue: "published-seed")
        /// Snapshot pages of the server, when there was no seed to use or it could not catch up.
        public static let snapshot = Kind(rawValue: "snapshot")
    }

    public var kind: Kind
    /// The seed's path or address, or the server's address for a snapshot.
    public var location: String

    public init(_ kind: Kind, _ location: String) {
        self.kind = kind
        self.location = location
    }
}
