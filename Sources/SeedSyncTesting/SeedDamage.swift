import Foundation
import GRDB
import SeedSyncSeed

/// Damage done to a seed on purpose, the kinds a check must catch.
public enum SeedDamage {
    /// Changes one character inside a stored text value, in the file's bytes: the file stays a
    /// well-formed SQLite database (`quick_check` and `integrity_check` pass), only the value differs.
    ///
    /// - Parameter text: a value stored in the seed, at least 4 bytes long; its second byte is changed.
    public static func changeCharacter(in text: String, of path: String) throws {
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let needle = Array(text.utf8)
        guard let start = bytes.firstRange(of: needle)?.lowerBound else {
            throw CocoaError(.fileReadCorruptFile, userInfo: [NSLocalizedDescriptionKey: "'\(text)' is not in \(path)"])
        }
        bytes[start + 1] = bytes[start + 1] == UInt8(ascii: "x") ? UInt8(ascii: "y") : UInt8(ascii: "x")
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    /// A text value of the seed's `events` table to damage with ``changeCharacter(in:of:)``.
    public static func someTitle(in path: String) throws -> String {
        let queue = try DatabaseQueue(path: path, configuration: readOnly)
        defer { try? queue.close() }
        return try queue.read { db in
            try String.fetchOne(
                db, sql: "SELECT title FROM events WHERE length(title) >= 8 ORDER BY id LIMIT 1 OFFSET 3") ?? ""
        }
    }

    /// Breaks the first page of the index `name`: its b-tree page type byte becomes invalid. The
    /// tables, and every value read through them, are untouched; `quick_check` reports the index.
    public static func breakIndex(_ name: String, of path: String) throws {
        let queue = try DatabaseQueue(path: path, configuration: readOnly)
        let root = try queue.read { db in
            try Int.fetchOne(db, sql: "SELECT rootpage FROM sqlite_schema WHERE name = ?", arguments: [name])
        }
        try queue.close()
        guard let root else {
            throw CocoaError(.fileReadCorruptFile, userInfo: [NSLocalizedDescriptionKey: "no index \(name) in \(path)"])
        }
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        try handle.seek(toOffset: UInt64((root - 1) * SeedFormat.pageSize))
        try handle.write(contentsOf: Data([0x42]))
    }

    /// Rewrites the manifest beside `seed` to describe the file as it is now (size and SHA-256),
    /// as someone who damaged the seed and then "fixed" its manifest would.
    public static func matchManifest(to seed: String) throws {
        let path = SeedManifest.path(forSeed: seed)
        var manifest = try SeedManifest.read(from: path)
        let digest = try FileDigest(ofFile: seed)
        manifest.size = digest.size
        manifest.sha256 = digest.sha256
        try manifest.jsonData().write(to: URL(fileURLWithPath: path))
    }

    private static var readOnly: Configuration {
        var configuration = Configuration()
        configuration.readonly = true
        return configuration
    }
}
