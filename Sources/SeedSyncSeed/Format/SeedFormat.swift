import Crypto
public import Foundation
import SeedSyncModel

/// The constants of the seed file format (see `docs/SEED-FORMAT.md`).
///
/// A seed is a SQLite file in rollback-journal mode (`journal_mode=DELETE`), vacuumed, with one
/// table per entity type and the metadata table `_seedsync_seed`. `PRAGMA application_id` marks
/// it as a seed; `PRAGMA user_version` is the schema version.
public enum SeedFormat {
    /// `PRAGMA application_id` of every seed: the ASCII bytes `SEED`.
    public static let applicationID: Int32 = 0x5345_4544
    /// The format version this package writes and reads.
    public static let version = 1
    /// The page size seeds are written with.
    public static let pageSize = 4096
    /// The metadata table: `key` and `value`, both text (see ``SeedMetadata``).
    static let metadataTable = "_seedsync_seed"
    /// Present while a seed is being built: the download cursor of each type.
    static let buildTable = "_seedsync_build"

    /// Whether the file at `path` begins with a SQLite header that carries ``applicationID``.
    ///
    /// It reads the header's bytes (`SQLiteHeader`) without SQLite, so it can tell a seed-format
    /// file from any other without opening it, even when SQLite would have to write to open it.
    package static func hasSeedHeader(at path: String) -> Bool {
        SQLiteHeader(path: path)?.applicationID == applicationID
    }

    /// The lowercase hex SHA-256 of `bytes`.
    public static func sha256(_ bytes: some DataProtocol) -> String {
        SHA256.hash(data: bytes).lowercaseHex
    }
}

extension DatasetSchema {
    /// The schema as canonical JSON: compact, object keys sorted, slashes not escaped.
    ///
    /// Seeds store it, and ``hash`` is computed over it.
    package var canonicalJSON: String {
        // Encoding plain Codable values with these options cannot fail.
        String(decoding: try! JSONEncoder.stable().encode(self), as: UTF8.self)
    }

    /// The lowercase hex SHA-256 of ``canonicalJSON``: equal hashes mean equal schemas.
    package var hash: String {
        SeedFormat.sha256(Data(canonicalJSON.utf8))
    }
}
