import Foundation
import GRDB
public import SeedSyncModel
import SeedSyncStore

extension SQLiteSyncStore {
    public func register(_ seed: SeedRegistration) async throws -> RegisteredSeed {
        try await writeTransaction { db in
            let state = try LogState.fetch(db)
            let history = try self.served(db, state).versions.history
            let existing = try SeedRecords.find(seed.sha256, in: db)
            switch try seed.check(
                revision: state.revision, minRevision: state.minRevision, history: history, existing: existing)
            {
            case .registered(let record):
                return record
            case .updated(let record, let reactivated):
                try db.execute(
                    sql:
                        "UPDATE _seedsync_seeds SET retired_at = CASE WHEN ? THEN NULL ELSE retired_at END, url = ? WHERE sha256 = ?",
                    arguments: [reactivated, record.url, seed.sha256])
                return try SeedRecords.find(seed.sha256, in: db) ?? record
            case .new(let record):
                try SeedRecords.insert(record, in: db)
                return record
            }
        }
    }

    public func registeredSeeds() async throws -> [RegisteredSeed] {
        try await pool.read { db in try SeedRecords.all(in: db) }
    }

    public func retireSeed(sha256: String) async throws -> RegisteredSeed? {
        try await writeTransaction { db in
            try db.execute(
                sql: "UPDATE _seedsync_seeds SET retired_at = ? WHERE sha256 = ? AND retired_at IS NULL",
                arguments: [RegisteredSeed.timestamp(Date()), sha256])
            return try SeedRecords.find(sha256, in: db)
        }
    }
}

/// `_seedsync_seeds`: the registered seeds, created when a file without it is opened (and given
/// `scopes`, the JSON array of a seed's scope values, and `url`, where it is published, when it
/// lacks them).
enum SeedRecords {
    static let createTable = """
        CREATE TABLE IF NOT EXISTS _seedsync_seeds (
          sha256 TEXT PRIMARY KEY NOT NULL,
          revision INTEGER NOT NULL,
          schema_version INTEGER NOT NULL,
          registered_at TEXT NOT NULL,
          retired_at TEXT,
          scopes TEXT,
          url TEXT
        )
        """

    /// Creates the table, or adds `scopes` and `url` to one made before them.
    static func prepare(_ db: Database) throws {
        try db.execute(sql: createTable)
        let columns = Set(try db.columns(in: "_seedsync_seeds").map(\.name))
        for column in ["scopes", "url"] where !columns.contains(column) {
            try db.execute(sql: "ALTER TABLE _seedsync_seeds ADD COLUMN \(column) TEXT")
        }
    }

    private static let select =
        "SELECT sha256, revision, schema_version, registered_at, retired_at, scopes, url FROM _seedsync_seeds"

    static func find(_ sha256: String, in db: Database) throws -> RegisteredSeed? {
        try Row.fetchOne(db, sql: "\(select) WHERE sha256 = ?", arguments: [sha256]).map(seed)
    }

    static func all(in db: Database) throws -> [RegisteredSeed] {
        try Row.fetchAll(db, sql: "\(select) ORDER BY revision, sha256").map(seed)
    }

    /// The registered seed with the oldest revision that is not retired: what compaction keeps.
    static func oldestPinned(in db: Database) throws -> RegisteredSeed? {
        try Row.fetchOne(db, sql: "\(select) WHERE retired_at IS NULL ORDER BY revision, sha256 LIMIT 1").map(seed)
    }

    static func insert(_ seed: RegisteredSeed, in db: Database) throws {
        try db.execute(
            sql:
                "INSERT INTO _seedsync_seeds (sha256, revision, schema_version, registered_at, scopes, url) VALUES (?, ?, ?, ?, ?, ?)",
            arguments: [seed.sha256, seed.revision, seed.schemaVersion, seed.registeredAt, seed.scopesText, seed.url])
    }

    private static func seed(_ row: Row) throws -> RegisteredSeed {
        RegisteredSeed(
            sha256: row[0], revision: row[1], schemaVersion: row[2], registeredAt: row[3], retiredAt: row[4],
            scopes: try RegisteredSeed.scopes(fromText: row[5]), url: row[6])
    }
}
