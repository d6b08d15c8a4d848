import Foundation
import SeedSyncSeed

/// Puts a finished seed in place with its manifest (and `.gz` copy): everything is written under
/// temporary names first, synced, then renamed. The old manifest goes first, so a manifest at
/// the final path always describes the seed beside it.
struct SeedPublisher {
    let output: String
    /// The finished seed, `OUT.new`.
    let finished: String
    let gzip: Bool

    func publish() throws -> SeedManifest {
        let manifestPath = SeedManifest.path(forSeed: output)
        let compressed = output + ".gz"
        do {
            return try write(manifestPath: manifestPath, compressed: compressed)
        } catch {
            Self.removeLeftovers(of: output)
            throw error
        }
    }

    /// Removes what a publish of `output` writes before its renames (`OUT.new`, `OUT.gz.new`, the
    /// manifest's `.new`): after a failed publish, and at the start of a build, for what a killed
    /// one left.
    static func removeLeftovers(of output: String) {
        for path in [output + ".new", output + ".gz.new", SeedManifest.path(forSeed: output) + ".new"] {
            try? FileManager.default.removeItem(atPath: path)
        }
    }

    private func write(manifestPath: String, compressed: String) throws -> SeedManifest {
        // With gzip, one pass over the seed hashes and compresses it.
        let digests = gzip ? try Gzip.compress(finished, to: compressed + ".new") : nil
        var manifest = try SeedManifest(describing: finished, digest: digests?.source)
        manifest.file = URL(fileURLWithPath: output).lastPathComponent
        if let digest = digests?.compressed {
            manifest.gzip = .init(file: manifest.file + ".gz", size: digest.size, sha256: digest.sha256)
        }
        try FileSystem.write(manifest.jsonData(), to: manifestPath + ".new")
        try FileSystem.sync(finished)
        try? FileManager.default.removeItem(atPath: manifestPath)
        try FileSystem.rename(finished, to: output)
        if gzip {
            try FileSystem.rename(compressed + ".new", to: compressed)
        } else {
            try? FileManager.default.removeItem(atPath: compressed)  // a stale copy of an older build
        }
        try FileSystem.rename(manifestPath + ".new", to: manifestPath)
        FileSystem.syncDirectory(of: output)
        return manifest
    }
}
