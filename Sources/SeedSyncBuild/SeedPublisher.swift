import Foundation
import SeedSyncSeed

/// Puts a finished seed in place with its manifest (and `.gz` copy): everything is written under
/// temporary names first, synced, then renamed. The old manifest goes first, so a manifest at
/// the final path always describes the seed beside it.
struct SeedPublisher {
    let output: String
    let partial: String
    let gzip: Bool

    func publish() throws -> SeedManifest {
        let manifestPath = SeedManifest.path(forSeed: output)
        let compressed = output + ".gz"
        do {
            return try write(manifestPath: manifestPath, compressed: compressed)
        } catch {
            try? FileManager.default.removeItem(atPath: compressed + ".partial")
            try? FileManager.default.removeItem(atPath: manifestPath + ".partial")
            throw error
        }
    }

    private func write(manifestPath: String, compressed: String) throws -> SeedManifest {
        var manifest = try SeedManifest(describing: partial)
        manifest.file = URL(fileURLWithPath: output).lastPathComponent
        if gzip {
            try Gzip.compress(partial, to: compressed + ".partial")
            let digest = try FileDigest(ofFile: compressed + ".partial")
            manifest.gzip = .init(file: manifest.file + ".gz", size: digest.size, sha256: digest.sha256)
        }
        try manifest.jsonData().write(to: URL(fileURLWithPath: manifestPath + ".partial"))
        try FileSystem.sync(partial)
        try FileSystem.sync(manifestPath + ".partial")
        try? FileManager.default.removeItem(atPath: manifestPath)
        try FileSystem.rename(partial, to: output)
        if gzip {
            try FileSystem.rename(compressed + ".partial", to: compressed)
        } else {
            try? FileManager.default.removeItem(atPath: compressed)  // a stale copy of an older build
        }
        try FileSystem.rename(manifestPath + ".partial", to: manifestPath)
        FileSystem.syncDirectory(of: output)
        return manifest
    }
}
