import Foundation
import SeedSyncModel

/// The seeds of a folder (``ServerConfiguration/seedsFolder``), by SHA-256: what
/// `GET /v1/seeds/{sha256}/{file}` serves.
///
/// The folder holds what `seed-build` publishes: `NAME.sqlite`, its `NAME.sqlite.manifest.json`
/// and often `NAME.sqlite.gz`. A seed is known by its manifest's `sha256` (the plain file's, as it
/// is registered); its manifest names the files it may serve. The folder is read again when a
/// request names a seed it has not seen and the folder changed since (its modification time: a
/// file was added, removed or renamed), or at most once a second otherwise, so seeds published
/// while the server runs are served at once, without a restart.
final class PublishedSeeds: Sendable {
    /// One seed's files, as its manifest describes them.
    struct Seed: Sendable {
        /// File name → its size and SHA-256 (the manifest's own has neither: it is read as it is).
        var files: [String: (size: Int64, sha256: String)?]
        var scopes: [JSONValue]?
        /// The file `GET /v1/seeds` offers a fresh app: the `.gz` copy when there is one, else the seed.
        var offered: String
    }

    /// What a manifest says, of what is served.
    private struct Manifest: Decodable {
        struct Compressed: Decodable {
            var file: String
            var size: Int64
            var sha256: String
        }
        var format: String
        var file: String
        var size: Int64
        var sha256: String
        var gzip: Compressed?
        var scopes: [JSONValue]?
    }

    let folder: String
    private let seeds = LockedValue<(bySHA256: [String: Seed], readAt: ContinuousClock.Instant?, modified: Date?)>(
        ([:], nil, nil))

    init(folder: String) {
        self.folder = folder
    }

    /// The seed whose plain file has SHA-256 `sha256`, reading the folder again when it is not
    /// known and the folder changed since the last read, or that read is a second old.
    func seed(_ sha256: String) -> Seed? {
        let (known, readAt, modified) = seeds.get()
        if let seed = known[sha256] { return seed }
        let now = Self.modification(of: folder)
        if let readAt, ContinuousClock.now - readAt < .seconds(1), now == modified { return nil }
        let read = Self.read(folder)
        seeds.set((read, .now, now))
        return read[sha256]
    }

    /// The folder's modification time, or `nil` when it cannot be read.
    private static func modification(of folder: String) -> Date? {
        (try? FileManager.default.attributesOfItem(atPath: folder))?[.modificationDate] as? Date
    }

    /// The path of `name` in the folder.
    func path(of name: String) -> String {
        URL(fileURLWithPath: folder).appendingPathComponent(name).path
    }

    /// Every seed described by a manifest in `folder` (not its subfolders); an unreadable manifest
    /// is left out.
    private static func read(_ folder: String) -> [String: Seed] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        var seeds: [String: Seed] = [:]
        for name in names where name.hasSuffix(".manifest.json") {
            let path = URL(fileURLWithPath: folder).appendingPathComponent(name).path
            guard let data = FileManager.default.contents(atPath: path),
                let manifest = try? JSONDecoder().decode(Manifest.self, from: data),
                manifest.format == "seedsync-seed-manifest", Self.isPlainName(manifest.file),
                SeedRegistration.isValidSHA256(manifest.sha256)
            else { continue }
            var files: [String: (size: Int64, sha256: String)?] = [
                name: nil, manifest.file: (manifest.size, manifest.sha256),
            ]
            var offered = manifest.file
            if let gzip = manifest.gzip, Self.isPlainName(gzip.file) {
                files[gzip.file] = (gzip.size, gzip.sha256)
                offered = gzip.file
            }
            seeds[manifest.sha256] = Seed(files: files, scopes: manifest.scopes, offered: offered)
        }
        return seeds
    }

    /// Whether `name` is a file name alone: no folder, nothing hidden.
    static func isPlainName(_ name: String) -> Bool {
        !name.isEmpty && !name.hasPrefix(".") && !name.contains("/") && !name.contains("\\")
    }
}
