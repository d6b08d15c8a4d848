import Foundation
import PostgresNIO
public import SeedSyncModel
import SeedSyncStore

extension PostgresSyncStore {
    /// Registers a seed under the store's lock (the `_state` row), so a compaction cannot move
    /// `min_revision` between the check and the record.
    public func register(_ seed: SeedRegistration) async throws -> RegisteredSeed {
        try await withTransaction { [self] connection in
            let state = try await query(
                "SELECT revision, min_revision, \(PostgresSchemaRecords.newestColumn) FROM seedsync._state WHERE id = 1 FOR UPDATE",
                on: connection)
            let (revision, minRevision, newest) = try state[0].decode((Int64, Int64, Int).self)
            let history = try await served(newest: newest, on: connection).versions.history
            let existing = try await PostgresSeedRecords.find(seed.sha256, on: connection, store: self)
            let record: RegisteredSeed
            switch try seed.check(revision: revision, minRevision: minRevision, history: history, existing: existing) {
            case .registered(let existing):
                return existing
            case .updated(let updated, let reactivated):
                var binds = PostgresBindings()
                binds.append(reactivated)
                binds.append(updated.url)
                binds.append(seed.sha256)
                return try await PostgresSeedRecords.seeds(
                    """
                    UPDATE seedsync._seeds SET retired_at = CASE WHEN $1 THEN NULL ELSE retired_at END, url = $2
                    WHERE sha256 = $3 RETURNING sha256, revision, schema_version, registered_at, retired_at, scopes, url
                    """, binds, on: connection, store: self
                ).first ?? updated
            case .new(let new):
                record = new
            }
            var binds = PostgresBindings()
            binds.append(record.sha256)
            binds.append(record.revision)
            binds.append(record.schemaVersion)
            binds.append(record.registeredAt)
            binds.append(record.scopesText)
            binds.append(record.url)
            _ = try await query(
                "INSERT INTO seedsync._seeds (sha256, revision, schema_version, registered_at, scopes, url) VALUES ($1, $2, $3, $4, $5, $6)",
                binds, on: connection)
            return record
        }
    }

    public func registeredSeeds() async throws -> [RegisteredSeed] {
        try await withConnection { [self] connection in
            try await PostgresSeedRecords.seeds(
                "\(PostgresSeedRecords.select) ORDER BY revision, sha256", on: connection, store: self)
        }
    }

    public func retireSeed(sha256: String) async throws -> RegisteredSeed? {
        try await withConnection { [self] connection in
            var binds = PostgresBindings()
            binds.append(RegisteredSeed.timestamp(Date()))
            binds.append(sha256)
            _ = try await query(
                "UPDATE seedsync._seeds SET retired_at = $1 WHERE sha256 = $2 AND retired_at IS NULL", binds,
                on: connection)
            return try await PostgresSeedRecords.find(sha256, on: connection, store: self)
        }
    }
}

/// `seedsync._seeds`: the registered seeds, created when a store made before it is opened (and
/// given `scopes`, the JSON array of a seed's scope values, and `url`, where it is published,
/// when it lacks them).
enum PostgresSeedRecords {
    static let createTable = """
        CREATE TABLE IF NOT EXISTS seedsync._seeds (
          sha256 text PRIMARY KEY, revision bigint NOT NULL, schema_version integer NOT NULL,
          registered_at text NOT NULL, retired_at text, scopes text, url text
        )
        """

    /// `scopes` and `url` added to a table made before them.
    static let addColumns =
        "ALTER TABLE seedsync._seeds ADD COLUMN IF NOT EXISTS scopes text, ADD COLUMN IF NOT EXISTS url text"

    static let select =
        "SELECT sha256, revision, schema_version, registered_at, retired_at, scopes, url FROM seedsync._seeds"

    static func find(_ sha256: String, on connection: PostgresConnection, store: PostgresSyncStore) async throws
        -> RegisteredSeed?
    {
        var binds = PostgresBindings()
        binds.append(sha256)
        return try await seeds("\(select) WHERE sha256 = $1", binds, on: connection, store: store).first
    }

    /// The registered seed with the oldest revision that is not retired: what compaction keeps.
    static func oldestPinned(on connection: PostgresConnection, store: PostgresSyncStore) async throws
        -> RegisteredSeed?
    {
        try await seeds(
            "\(select) WHERE retired_at IS NULL ORDER BY revision, sha256 LIMIT 1", on: connection, store: store
        ).first
    }

    static func seeds(
        _ sql: String, _ binds: PostgresBindings = PostgresBindings(), on connection: PostgresConnection,
        store: PostgresSyncStore
    ) async throws -> [RegisteredSeed] {
        try await store.query(sql, binds, on: connection).map { row in
            let (sha256, revision, version, registered, retired, scopes, url) = try row.decode(
                (String, Int64, Int, String, String?, String?, String?).self)
            return RegisteredSeed(
                sha256: sha256, revision: revision, schemaVersion: version, registeredAt: registered,
                retiredAt: retired, scopes: try RegisteredSeed.scopes(fromText: scopes), url: url)
        }
    }
}
