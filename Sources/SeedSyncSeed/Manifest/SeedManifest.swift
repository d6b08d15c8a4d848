public import Foundation
public import SeedSyncModel

/// The manifest written beside a seed (`demo.sqlite.manifest.json`): what the file holds and the
/// hash that proves it arrived whole.
///
/// ```json
/// {"format": "seedsync-seed-manifest", "formatVersion": 1, "file": "demo.sqlite",
///  "size": 532480, "sha256": "…", "revision": 301, "dataset": "demo", "schemaVersion": 1,
///  "schemaHash": "…", "rowCounts": {"events": 2000, "locations": 200},
///  "sqliteVersion": "3.40.1", "pageSize": 4096, "createdAt": "2026-11-22T10:00:00Z",
///  "gzip": {"file": "demo.sqlite.gz", "size": 180211, "sha256": "…"}}
/// ```
public struct SeedManifest: Codable, Sendable, Hashable {
    /// A compressed copy of the seed.
    public struct Compressed: Codable, Sendable, Hashable {
        public var file: String
        public var size: Int64
        public var sha256: String
        /// The zlib level it was compressed at, 1 to 9 (`seed-build --gzip-level`): with the seed's
        /// bytes, it decides the `.gz` file's bytes, so a rebuild at the same level is byte for
        /// byte the same. `nil` in a manifest older than the level: 6.
        public var level: Int?

        public init(file: String, size: Int64, sha256: String, level: Int? = nil) {
            self.file = file
            self.size = size
            self.sha256 = sha256
            self.level = level
        }
    }

    /// Always `seedsync-seed-manifest`.
    public var format: String
    public var formatVersion: Int
    /// The seed's file name, without a directory.
    public var file: String
    public var size: Int64
    public var sha256: String
    public var revision: Int64
    public var dataset: String
    public var schemaVersion: Int
    public var schemaHash: String
    /// Rows per type's table.
    public var rowCounts: [String: Int]
    /// The SQLite library that wrote the file: byte-identical builds need the same one.
    public var sqliteVersion: String
    public var pageSize: Int
    /// When the manifest was written, RFC 3339 UTC; the one field that differs between builds.
    public var createdAt: String
    public var gzip: Compressed?
    /// The scope values whose rows the seed holds (with the shared rows), when it was built with a
    /// token of some values only; absent: every value.
    public var scopes: [JSONValue]?
    /// The seed's anchor: the server's history chain at ``revision`` (metadata `history_chain`,
    /// `docs/PROTOCOL.md` §11), so that a signature of the manifest covers it; absent when the
    /// server keeps no chain, and in a manifest written before it existed.
    public var historyChain: HistoryChain?
    /// Signatures of the manifest (``signed(with:)``), which cover every other member and so the
    /// file's SHA-256; absent in an unsigned manifest. ``TrustedKeys`` checks them.
    public var signatures: [SeedSignature]?

    public static let formatName = "seedsync-seed-manifest"

    /// The manifest path for a seed: `SEED.manifest.json`, with a `.gz` suffix dropped first.
    public static func path(forSeed seed: String) -> String {
        (seed.hasSuffix(".gz") ? String(seed.dropLast(3)) : seed) + ".manifest.json"
    }

    /// Describes the finished seed at `path`, hashing it.
    ///
    /// - Parameter digest: the file's digest when the caller already has it (from compressing
    ///   it, say); the file is hashed otherwise.
    /// - Parameter createdAt: the creation time; `SOURCE_DATE_EPOCH` from the environment when set,
    ///   for reproducible manifests, else now.
    package init(describing path: String, digest: FileDigest? = nil, createdAt: Date = SeedManifest.creationDate())
        throws
    {
        let seed = try SeedFile(path: path)
        defer { try? seed.close() }
        let metadata = try seed.metadata()
        let storage = try seed.storage()
        let digest = try digest ?? FileDigest(ofFile: path)
        format = Self.formatName
        formatVersion = metadata.formatVersion
        file = URL(fileURLWithPath: path).lastPathComponent
        size = digest.size
        sha256 = digest.sha256
        revision = metadata.revision
        dataset = metadata.dataset
        schemaVersion = metadata.schemaVersion
        schemaHash = metadata.schemaHash
        rowCounts = try seed.rowCounts(of: metadata.schema)
        scopes = metadata.scopes
        historyChain = metadata.chain
        sqliteVersion = storage.sqliteVersion
        pageSize = storage.pageSize
        self.createdAt = Self.rfc3339(createdAt)
    }

    /// Reads a manifest file.
    public static func read(from path: String) throws -> SeedManifest {
        try readWithJSON(from: path).manifest
    }

    /// Reads a manifest file, with the JSON it was read from (what its signatures sign).
    package static func readWithJSON(from path: String) throws -> (manifest: SeedManifest, json: Data) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw SeedError.system(errno, "read the manifest \(path)")
        }
        return (try decode(data, from: path), data)
    }

    /// The manifest in `data`, read from `source` (a path or an address, for messages).
    public static func decode(_ data: Data, from source: String) throws -> SeedManifest {
        do {
            let manifest = try JSONDecoder().decode(SeedManifest.self, from: data)
            guard manifest.format == formatName else {
                throw SeedError(.damaged, "\(source) is not a seed manifest")
            }
            return manifest
        } catch let error as SeedError {
            throw error
        } catch {
            throw SeedError(.damaged, "\(source) is not a valid seed manifest")
        }
    }

    /// What the manifest says that the seed it describes does not, a phrase each (none when they
    /// agree): its size and SHA-256 as read (`digest`), its metadata and its tables' row counts (a
    /// manifest without a history chain, written before it existed, is not compared on it).
    /// The file name is not compared: a seed may be shipped under another name.
    package func mismatches(digest: FileDigest, metadata: SeedMetadata, rowCounts: [String: Int]) -> [String] {
        [
            formatVersion == metadata.formatVersion
                ? nil : "format version \(formatVersion), the seed has \(metadata.formatVersion)",
            pageSize == SeedFormat.pageSize ? nil : "page size \(pageSize)",
            size == digest.size ? nil : "size \(size), the file has \(digest.size) bytes",
            sha256 == digest.sha256 ? nil : "SHA-256 \(sha256), the file hashes to \(digest.sha256)",
            revision == metadata.revision ? nil : "revision \(revision), the seed has \(metadata.revision)",
            dataset == metadata.dataset ? nil : "dataset \(dataset), the seed has \(metadata.dataset)",
            schemaVersion == metadata.schemaVersion
                ? nil : "schema version \(schemaVersion), the seed has \(metadata.schemaVersion)",
            schemaHash == metadata.schemaHash ? nil : "schema hash differs",
            self.rowCounts == rowCounts
                ? nil : "row counts \(Self.describe(self.rowCounts)), the seed has \(Self.describe(rowCounts))",
            scopes == metadata.scopes
                ? nil : "scope values \(Self.describe(scopes)), the seed has \(Self.describe(metadata.scopes))",
            historyChain == nil || historyChain == metadata.chain
                ? nil : "history chain \(historyChain!), the seed has \(metadata.chain?.hex ?? "none")",
        ].compactMap { $0 }
    }

    private static func describe(_ scopes: [JSONValue]?) -> String {
        scopes.map { $0.compactMap(\.keyString).joined(separator: ", ") } ?? "all"
    }

    private static func describe(_ counts: [String: Int]) -> String {
        counts.keys.sorted().map { "\($0)=\(counts[$0]!)" }.joined(separator: ", ")
    }

    /// The manifest as pretty-printed JSON with sorted keys, ending in a newline.
    public func jsonData() -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return try! encoder.encode(self) + Data("\n".utf8)
    }

    /// `SOURCE_DATE_EPOCH` when set (reproducible builds), else now.
    public static func creationDate(environment: [String: String] = ProcessInfo.processInfo.environment) -> Date {
        environment["SOURCE_DATE_EPOCH"].flatMap(TimeInterval.init).map(Date.init(timeIntervalSince1970:)) ?? Date()
    }

    private static func rfc3339(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: date)
    }
}
