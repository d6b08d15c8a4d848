public import Foundation
import GRDB
import SeedSyncSQL

/// Proves a seed is sound before it ships: every check of `seed-verify`, each reported on its own.
///
/// ```swift
/// let report = try await SeedVerifier.verify("Snapshots/demo.sqlite")
/// if !report.passed { print(report.failures) }
/// ```
///
/// The file is opened read-only and hashed on a second thread while SQLite checks it, so a seed
/// verifies in about the time it takes to read it. A `.gz` seed is checked against the manifest's
/// `gzip` entry, decompressed into a temporary file, then checked like a plain one.
public enum SeedVerifier {
    public struct Options: Sendable {
        /// The manifest to compare with; `nil` looks for one beside the seed and skips the check
        /// when there is none.
        public var manifestPath: String?
        public var expectedRevision: Int64?
        public var expectedSchemaVersion: Int?
        /// Where a `.gz` seed is decompressed.
        public var temporaryDirectory: URL
        /// The keys one of which must have signed the manifest (the `signature` check); empty: the
        /// check is skipped.
        public var trustedKeys: TrustedKeys

        public init(
            manifestPath: String? = nil,
            expectedRevision: Int64? = nil,
            expectedSchemaVersion: Int? = nil,
            temporaryDirectory: URL = FileManager.default.temporaryDirectory,
            trustedKeys: TrustedKeys = TrustedKeys()
        ) {
            self.trustedKeys = trustedKeys
            self.manifestPath = manifestPath
            self.expectedRevision = expectedRevision
            self.expectedSchemaVersion = expectedSchemaVersion
            self.temporaryDirectory = temporaryDirectory
        }
    }

    /// Runs every check on the seed at `path`.
    ///
    /// - Throws: only when `path` does not exist; every problem with the file is a failed check.
    public static func verify(_ path: String, options: Options = Options()) async throws -> VerificationReport {
        guard FileManager.default.fileExists(atPath: path) else { throw SeedError(.notFound, "no seed at \(path)") }
        var report = VerificationReport(seed: path)
        let read = loadManifest(for: path, options: options, into: &report)
        await runChecks(path, manifest: read?.manifest, options: options, into: &report)
        checkSignature(of: path, manifest: read, options: options, into: &report)
        return report
    }

    private static func runChecks(
        _ path: String, manifest: SeedManifest?, options: Options, into report: inout VerificationReport
    ) async {
        guard path.hasSuffix(".gz") else {
            await SeedChecks(path: path, manifest: manifest, options: options).run(into: &report)
            return
        }
        let plain = options.temporaryDirectory.appendingPathComponent("seed-verify-\(UUID().uuidString).sqlite").path
        defer { try? FileManager.default.removeItem(atPath: plain) }
        guard checkGzip(path, into: plain, manifest: manifest, report: &report) else { return }
        await SeedChecks(path: plain, manifest: manifest, options: options, besideFile: path).run(into: &report)
    }

    private static func loadManifest(for path: String, options: Options, into report: inout VerificationReport)
        -> (manifest: SeedManifest, json: Data)?
    {
        let manifestPath = options.manifestPath ?? SeedManifest.path(forSeed: path)
        guard options.manifestPath != nil || FileManager.default.fileExists(atPath: manifestPath) else {
            report.skip("manifest", "no manifest at \(manifestPath)")
            return nil
        }
        do {
            return try SeedManifest.readWithJSON(from: manifestPath)
        } catch {
            report.record("manifest", false, "\(error)")
            return nil
        }
    }

    /// The `signature` check: a signature by a trusted key over the manifest, whose SHA-256 the
    /// `manifest` check then compares with the file's.
    private static func checkSignature(
        of path: String, manifest: (manifest: SeedManifest, json: Data)?, options: Options,
        into report: inout VerificationReport
    ) {
        let trusted = options.trustedKeys
        guard !trusted.isEmpty else {
            let signers = manifest?.manifest.signatures?.map(\.key).joined(separator: ", ")
            report.skip(
                "signature", signers.map { "signed by key \($0); no key trusted (--trust)" } ?? "no key trusted")
            return
        }
        guard let (manifest, json) = manifest else {
            report.record("signature", false, "no readable manifest, so nothing is signed; keys \(trusted) are trusted")
            return
        }
        do {
            let key = try trusted.check(manifestJSON: json, manifest: manifest, of: path)
            report.record("signature", true, "the manifest is signed by trusted key \(key.id)")
        } catch {
            report.record("signature", false, error.description)
        }
    }

    /// The `.gz` file's own hash, then its decompression into `plain`.
    private static func checkGzip(
        _ path: String, into plain: String, manifest: SeedManifest?, report: inout VerificationReport
    ) -> Bool {
        if let expected = manifest?.gzip {
            do {
                let digest = try FileDigest(ofFile: path)
                let matches = digest.size == expected.size && digest.sha256 == expected.sha256
                report.record(
                    "gzip-hash", matches,
                    matches
                        ? "size and SHA-256 match the manifest"
                        : "size \(digest.size), SHA-256 \(digest.sha256); the manifest says \(expected.size), \(expected.sha256)"
                )
            } catch {
                report.record("gzip-hash", false, "\(error)")
            }
        } else {
            report.skip("gzip-hash", "the manifest records no gzip file")
        }
        do {
            // With a manifest, a file that inflates past the seed's size is wrong: stop there, not at a full disk.
            let size = try FileCopy.copy(path, to: plain, decompress: true, limit: manifest?.size ?? .max).size
            report.record("gzip", true, "decompressed to \(size) bytes")
            return true
        } catch {
            report.record("gzip", false, "\(error)")
            return false
        }
    }
}
