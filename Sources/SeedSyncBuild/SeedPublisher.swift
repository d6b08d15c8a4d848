import Foundation
import SeedSyncSeed

/// Puts a finished seed in place with its manifest (and `.gz` copy): everything is written under
/// temporary names first, synced, then renamed. The old manifest goes first, so a manifest at
/// the final path always describes the seed beside it.
struct SeedPublisher {
    let files: SeedFiles
    /// The finished seed, `OUT.new` (``SeedFiles/finished``).
    let finished: String
    /// The build's: whether to write a `.gz` copy and at which level, which keys sign the manifest.
    let options: SeedBuilder.Options
    private var gzip: Bool { options.gzip }

    func publish() throws -> SeedManifest {
        do {
            return try write()
        } catch {
            Self.removeLeftovers(of: files)
            throw error
        }
    }

    /// Removes what a publish writes before its renames (``SeedFiles/staged``): after a failed
    /// publish, and at the start of a build, for what a killed one left.
    static func removeLeftovers(of files: SeedFiles) {
        for path in files.staged { try? FileManager.default.removeItem(atPath: path) }
    }

    private func write() throws -> SeedManifest {
        let (output, manifestPath, compressed) = (files.output, files.manifest, files.gzip)
        // With gzip, one pass over the seed hashes and compresses it.
        let level = options.gzipLevel
        let digests =
            gzip ? try Gzip.compress(finished, to: SeedFiles.staging(compressed), level: Int32(level)) : nil
        var manifest = try SeedManifest(describing: finished, digest: digests?.source)
        manifest.file = URL(fileURLWithPath: output).lastPathComponent
        if let digest = digests?.compressed {
            manifest.gzip = .init(
                file: URL(fileURLWithPath: compressed).lastPathComponent, size: digest.size, sha256: digest.sha256,
                level: level)
        }
        manifest = manifest.signed(with: options.signingKeys)
        try FileSystem.write(manifest.jsonData(), to: SeedFiles.staging(manifestPath))
        try FileSystem.sync(finished)
        try? FileManager.default.removeItem(atPath: manifestPath)
        try FileSystem.rename(finished, to: output)
        if gzip {
            try FileSystem.rename(SeedFiles.staging(compressed), to: compressed)
        } else {
            try? FileManager.default.removeItem(atPath: compressed)  // a stale copy of an older build
        }
        try FileSystem.rename(SeedFiles.staging(manifestPath), to: manifestPath)
        FileSystem.syncDirectory(of: output)
        return manifest
    }
}
