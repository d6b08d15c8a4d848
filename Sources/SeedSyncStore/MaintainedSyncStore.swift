public import SeedSyncModel

/// A store as `seed-server`'s commands manage it: bulk loads and compaction besides serving.
/// The embedded SQLite store and the PostgreSQL store both are one; tests run one body on both.
///
/// ```swift
/// let (revision, rows) = try await store.bulkLoad([
///     BulkLoad(type: "events") { try NDJSONRowReader(path: "events.ndjson", type: events) },
/// ])
/// ```
public protocol MaintainedSyncStore: SyncStore {
    /// Writes the rows of `loads` (upserted: a loaded row replaces the stored one) as one new
    /// revision, in one transaction. Bulk revisions are not logged: the change log is cleared and
    /// `minRevision` moves up to the new revision, so older clients download a new snapshot.
    ///
    /// - Returns: the revision and the number of rows loaded per type.
    /// - Throws: when a loaded row references a missing row, and whatever the sources throw;
    ///   nothing is written then.
    func bulkLoad(_ loads: [BulkLoad]) async throws -> (revision: Int64, rows: [String: Int])

    /// Drops change sets older than the newest `keep` revisions and raises `minRevision` to match,
    /// but never past the revision of a registered seed that is not retired (see
    /// `SyncStore/register(_:)`): the result names the seed that held it back. A client at
    /// `revision - keep` or newer can still sync; older ones download a new snapshot.
    func compact(keepingRevisions keep: Int64) async throws -> Compaction

    /// Every key of `type`, in key order (for mutation generators, fuzz corpora and tests).
    func keys(of type: String) async throws -> [JSONValue]

    /// Retires a registered seed: it no longer holds compaction back.
    ///
    /// - Returns: the seed retired, or `nil` when none has that SHA-256.
    func retireSeed(sha256: String) async throws -> RegisteredSeed?

    /// Makes `schema` the store's newest version, at its current revision, without an outage:
    /// the tables take the new shape in one transaction, clients of every older version keep
    /// syncing in theirs, and change sets from then on are written in the new one. Only changes
    /// `SchemaHistory.upgrading(to:renaming:at:)` accepts can be made; renamed fields are stated
    /// in `renames`.
    ///
    /// - Returns: the upgrade: the new history, the version and what changed.
    /// - Throws: `SchemaUpgradeError` naming the change that cannot be made and what to do
    ///   instead; nothing is changed then.
    func upgrade(to schema: DatasetSchema, renaming renames: [FieldRename]) async throws -> SchemaUpgrade
}

extension MaintainedSyncStore {
    /// Loads an NDJSON file into `type` as one bulk revision (see `bulkLoad(_:)`).
    ///
    /// - Returns: the revision and the number of rows loaded.
    public func load(ndjsonFile path: String, into type: String) async throws -> (revision: Int64, rows: Int) {
        guard let entity = try await schemaHistory().newest.schema.type(named: type) else {
            throw SyncStoreError.unknownType(type)
        }
        let result = try await bulkLoad([BulkLoad(type: type) { try NDJSONRowReader(path: path, type: entity) }])
        return (result.revision, result.rows[type] ?? 0)
    }
}

/// The outcome of ``MaintainedSyncStore/compact(keepingRevisions:)``.
public struct Compaction: Sendable, Hashable {
    /// How many change sets were dropped.
    public var removedChangeSets: Int
    /// The new oldest revision a client may sync from.
    public var minRevision: Int64
    /// The registered seed that kept more history than asked for, when one did: the oldest not retired.
    public var pinnedBy: RegisteredSeed?

    public init(removedChangeSets: Int, minRevision: Int64, pinnedBy: RegisteredSeed? = nil) {
        self.removedChangeSets = removedChangeSets
        self.minRevision = minRevision
        self.pinnedBy = pinnedBy
    }
}
