import Foundation
package import GRDB
public import SeedSyncModel

/// What a seed says about itself: the rows of its `_seedsync_seed` table.
///
/// | key | value |
/// |---|---|
/// | `format_version` | `1` |
/// | `dataset` | the dataset name |
/// | `schema_version` | the schema version (also `PRAGMA user_version`) |
/// | `schema_hash` | `DatasetSchema/hash` of `schema` |
/// | `schema` | `DatasetSchema/canonicalJSON` of the types in the file |
/// | `revision` | the server revision the rows are at |
/// | `content_sha256` | the `ContentDigest` of the rows and the other keys, written when the seed is finished; removed by the first change set applied after |
/// | `scopes` | the scope values whose rows the file holds, a compact JSON array in key order; absent: every value (see `ScopeDeclaration`) |
public struct SeedMetadata: Sendable, Hashable {
    public var formatVersion: Int
    public var schema: DatasetSchema
    public var schemaHash: String
    /// The revision every row of the file is at: no row's `revision` is above it.
    public var revision: Int64
    /// The SHA-256 of the content as the seed was finished (`content_sha256`), or `nil` in a
    /// database that has moved on since, or in a seed written before the key existed.
    public var contentSHA256: String?
    /// The scope values whose rows the file holds (with the shared rows), in key order, or `nil`
    /// for every value: a seed built with a token of some values holds theirs alone.
    public var scopes: [JSONValue]?
    /// The server's history chain at ``revision`` (`history_chain`, the seed's **anchor**), or
    /// `nil` when unknown (a server that keeps none, or a database whose last write did not bring
    /// it). Always the value of ``revision``: every write of the revision writes or removes it.
    public var chain: HistoryChain?

    public var dataset: String { schema.dataset }
    public var schemaVersion: Int { schema.schemaVersion }

    public init(schema: DatasetSchema, revision: Int64) {
        formatVersion = SeedFormat.version
        self.schema = schema
        schemaHash = schema.hash
        self.revision = revision
    }

    enum Key: String, CaseIterable {
        case formatVersion = "format_version"
        case dataset
        case schemaVersion = "schema_version"
        case schemaHash = "schema_hash"
        case schema
        case revision
        case contentSHA256 = "content_sha256"
        case scopes
        case chain = "history_chain"
    }

    /// Reads the metadata of the seed-format database `db` (the file at `path`).
    ///
    /// - Throws: ``SeedError/Code/notASeed`` when its application id is not SeedSync's, else what
    ///   ``read(_:path:)`` throws.
    package static func read(seedIn db: Database, path: String) throws -> SeedMetadata {
        let applicationID = try Int32.fetchOne(db, sql: "PRAGMA application_id") ?? 0
        guard applicationID == SeedFormat.applicationID else {
            throw SeedError.notASeed(path, "its application id is \(applicationID), not \(SeedFormat.applicationID)")
        }
        return try read(db, path: path)
    }

    /// Reads the metadata table.
    ///
    /// - Throws: ``SeedError`` naming the missing or invalid key.
    static func read(_ db: Database, path: String) throws -> SeedMetadata {
        guard try db.tableExists(SeedFormat.metadataTable) else {
            throw SeedError.notASeed(path, "it has no \(SeedFormat.metadataTable) table")
        }
        // A damaged file may hold anything: a NULL or a number where text belongs is an error, never a trap.
        let table = SeedFormat.metadataTable
        guard
            try Bool.fetchOne(
                db, sql: "SELECT EXISTS (SELECT 1 FROM \(table) WHERE typeof(key) <> 'text' OR typeof(value) <> 'text')"
            ) == false
        else {
            throw SeedError.notASeed(path, "metadata holds a key or a value that is not text")
        }
        let rows = try Row.fetchAll(db, sql: "SELECT key, value FROM \(table)")
        var values: [String: String] = [:]
        for row in rows { values[row[0]] = row[1] }
        func value(_ key: Key) throws -> String {
            guard let value = values[key.rawValue] else {
                throw SeedError.notASeed(path, "metadata '\(key.rawValue)' is missing")
            }
            return value
        }
        guard let formatVersion = Int(try value(.formatVersion)) else {
            throw SeedError.notASeed(path, "metadata 'format_version' is not a number")
        }
        guard formatVersion == SeedFormat.version else {
            throw SeedError.notASeed(
                path, "format version \(formatVersion) is not supported (this build reads \(SeedFormat.version))")
        }
        guard let revision = Int64(try value(.revision)), revision >= 0 else {
            throw SeedError.notASeed(path, "metadata 'revision' is not a revision")
        }
        let schema: DatasetSchema
        let schemaJSON = try value(.schema)
        do {
            schema = try JSONDecoder().decode(DatasetSchema.self, from: Data(schemaJSON.utf8))
            try schema.validate(allowingReservedTypeNames: true)
        } catch {
            throw SeedError.notASeed(
                path, "metadata 'schema' is not a valid schema" + ((error as? SchemaError).map { " (\($0))" } ?? ""))
        }
        guard schema.canonicalJSON == schemaJSON else {
            throw SeedError.notASeed(path, "metadata 'schema' is not in canonical form")
        }
        guard try value(.dataset) == schema.dataset, try value(.schemaVersion) == String(schema.schemaVersion) else {
            throw SeedError.notASeed(path, "metadata 'dataset' or 'schema_version' disagrees with 'schema'")
        }
        var metadata = SeedMetadata(schema: schema, revision: revision)
        metadata.schemaHash = try value(.schemaHash)
        metadata.contentSHA256 = values[Key.contentSHA256.rawValue]
        if let scopes = values[Key.scopes.rawValue] {
            guard case .array(let list)? = try? JSONParser.parse(Array(scopes.utf8)),
                list.allSatisfy({ $0.keyString != nil }), encodeScopes(list) == scopes
            else {
                throw SeedError.notASeed(path, "metadata 'scopes' is not a sorted JSON array of scope values")
            }
            metadata.scopes = list
        }
        if let chain = values[Key.chain.rawValue] {
            guard let value = HistoryChain(hex: chain) else {
                throw SeedError.notASeed(path, "metadata 'history_chain' is not 64 (or 8) lower-case hex digits")
            }
            metadata.chain = value
        }
        return metadata
    }

    /// Writes every key, replacing what is there.
    func write(_ db: Database) throws {
        let values: [Key: String] = [
            .formatVersion: String(formatVersion), .dataset: dataset, .schemaVersion: String(schemaVersion),
            .schemaHash: schemaHash, .schema: schema.canonicalJSON, .revision: String(revision),
            .contentSHA256: contentSHA256, .scopes: scopes.map(Self.encodeScopes), .chain: chain?.hex,
        ].compactMapValues { $0 }
        for key in Key.allCases where values[key] != nil {
            try db.execute(
                sql: "INSERT OR REPLACE INTO \(SeedFormat.metadataTable) (key, value) VALUES (?, ?)",
                arguments: [key.rawValue, values[key]]
            )
        }
    }

    /// Scope values as the `scopes` key holds them: sorted by key order, compact JSON.
    static func encodeScopes(_ values: [JSONValue]) -> String {
        var writer = JSONWriter()
        writer.value(.array(values.sorted(by: JSONValue.keyPrecedes)))
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    /// Stores a new revision; called in the transaction that applied the change sets up to it.
    ///
    /// The content digest goes in the same transaction: it describes the rows as the seed was
    /// finished, which they no longer are.
    /// The history chain goes with it: `chain` is stored when given, and the key removed when not,
    /// so the stored chain is never one of another revision.
    static func save(revision: Int64, chain: HistoryChain? = nil, in db: Database) throws {
        try db.execute(
            sql: "UPDATE \(SeedFormat.metadataTable) SET value = ? WHERE key = ?",
            arguments: [String(revision), Key.revision.rawValue]
        )
        try db.execute(
            sql: "DELETE FROM \(SeedFormat.metadataTable) WHERE key IN (?, ?)",
            arguments: [Key.contentSHA256.rawValue, Key.chain.rawValue])
        if let chain { try save(chain: chain, in: db) }
    }

    /// Stores `chain` as the history chain of the stored revision, when that is `revision` (an
    /// answer that brought no change set, whose `chain` is the one of the revision the database has).
    package static func save(chain: HistoryChain, ifAt revision: Int64, in db: Database) throws {
        guard try storedRevision(db) == revision else { return }
        try save(chain: chain, in: db)
    }

    private static func save(chain: HistoryChain, in db: Database) throws {
        try db.execute(
            sql: "INSERT OR REPLACE INTO \(SeedFormat.metadataTable) (key, value) VALUES (?, ?)",
            arguments: [Key.chain.rawValue, chain.hex])
    }

    /// The history chain stored with the revision, if any.
    package static func storedChain(_ db: Database) throws -> HistoryChain? {
        try String.fetchOne(
            db, sql: "SELECT value FROM \(SeedFormat.metadataTable) WHERE key = ?", arguments: [Key.chain.rawValue]
        ).flatMap(HistoryChain.init(hex:))
    }

    /// Stores the scope values whose rows the database now holds (a grant that lost some), in the
    /// transaction that deleted the others; the content digest goes, as with ``save(revision:in:)``.
    package static func save(scopes: [JSONValue], in db: Database) throws {
        try db.execute(
            sql: "INSERT OR REPLACE INTO \(SeedFormat.metadataTable) (key, value) VALUES (?, ?)",
            arguments: [Key.scopes.rawValue, encodeScopes(scopes)])
        try db.execute(
            sql: "DELETE FROM \(SeedFormat.metadataTable) WHERE key = ?", arguments: [Key.contentSHA256.rawValue])
    }

    /// Stores a new schema version (a migrated database): `dataset`, `schema_version`,
    /// `schema_hash`, `schema` and `PRAGMA user_version`; the content digest goes, as with
    /// ``save(revision:in:)``.
    package static func save(schema: DatasetSchema, in db: Database) throws {
        var metadata = SeedMetadata(schema: schema, revision: try storedRevision(db))
        metadata.formatVersion = SeedFormat.version
        try metadata.write(db)
        try db.execute(
            sql: "DELETE FROM \(SeedFormat.metadataTable) WHERE key = ?", arguments: [Key.contentSHA256.rawValue])
        try db.execute(sql: "PRAGMA user_version = \(schema.schemaVersion)")
    }

    /// Stores the content digest of the finished seed (see ``ContentDigest``).
    static func save(contentSHA256 digest: String, in db: Database) throws {
        try db.execute(
            sql: "INSERT OR REPLACE INTO \(SeedFormat.metadataTable) (key, value) VALUES (?, ?)",
            arguments: [Key.contentSHA256.rawValue, digest]
        )
    }

    /// `CREATE TABLE` of the metadata table.
    static let createTable = """
        CREATE TABLE \(SeedFormat.metadataTable) (
          key TEXT PRIMARY KEY NOT NULL,
          value TEXT NOT NULL
        ) WITHOUT ROWID
        """
}

extension SeedMetadata {
    /// The `revision` key alone, read inside a write transaction.
    package static func storedRevision(_ db: Database) throws -> Int64 {
        guard
            let text = try String.fetchOne(
                db, sql: "SELECT value FROM \(SeedFormat.metadataTable) WHERE key = ?",
                arguments: [Key.revision.rawValue]
            ), let revision = Int64(text)
        else {
            throw SeedError.invalidData("the database has no seed revision")
        }
        return revision
    }

    /// The `schema_hash` key alone: whether another schema was copied in since the file was opened.
    package static func storedSchemaHash(_ db: Database) throws -> String? {
        try String.fetchOne(
            db, sql: "SELECT value FROM \(SeedFormat.metadataTable) WHERE key = ?", arguments: [Key.schemaHash.rawValue]
        )
    }
}
