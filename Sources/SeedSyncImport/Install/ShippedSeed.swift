import Foundation
import SeedSyncSQL
import SeedSyncSeed

/// The seed the app ships: a plain or `.gz` file, with its manifest when one is beside it
/// (`SEED.manifest.json`, see `SeedManifest/path(forSeed:)`).
struct ShippedSeed: Sendable {
    /// What a seed is, without its rows.
    struct Summary: Sendable {
        var dataset: String
        var schemaVersion: Int
        var revision: Int64
    }

    let path: String
    let manifest: SeedManifest?
    /// The seed's dataset, schema version and revision when they can be read without copying it:
    /// from the manifest, or from a plain seed's metadata. `nil` for a `.gz` seed without a
    /// manifest, and when the seed is unusable.
    let summary: Summary?
    /// Why the seed cannot be used at all (missing, unreadable manifest or metadata), or `nil`.
    /// It stops an install; a database that is already there goes on without the seed.
    let problem: ImportError?
    var isCompressed: Bool { path.hasSuffix(".gz") }

    /// Finds the seed and reads its manifest when there is one, else a plain seed's metadata.
    /// With `trustedKeys`, the manifest must be there and signed by one of them. A seed that is
    /// missing, unreadable or untrusted is not an error yet: see ``problem``.
    init(path: String, trustedKeys: TrustedKeys = TrustedKeys()) {
        self.path = path
        do {
            guard FileManager.default.fileExists(atPath: path) else {
                throw ImportError(.invalidSeed, "no seed at \(path)")
            }
            let manifest = try Self.manifest(of: path, trustedKeys: trustedKeys)
            (self.manifest, summary, problem) = (manifest, try Self.summary(of: path, manifest: manifest), nil)
        } catch {
            (manifest, summary) = (nil, nil)
            problem = error as? ImportError ?? ImportError(.invalidSeed, "\(error)")
        }
    }

    private static func manifest(of path: String, trustedKeys: TrustedKeys) throws -> SeedManifest? {
        do {
            return try trustedKeys.readManifest(at: SeedManifest.path(forSeed: path), of: path)
        } catch let error as SeedError where error.isTrustFailure {
            throw ImportError(error, otherwise: .untrustedSeed)
        } catch {
            throw ImportError(.invalidSeed, "the seed's manifest is unreadable: \(error)")
        }
    }

    private static func summary(of path: String, manifest: SeedManifest?) throws -> Summary? {
        if let manifest {
            return Summary(
                dataset: manifest.dataset, schemaVersion: manifest.schemaVersion, revision: manifest.revision)
        }
        guard !path.hasSuffix(".gz") else { return nil }
        do {
            let file = try SeedFile(path: path)
            defer { try? file.close() }
            let metadata = try file.metadata()
            return Summary(
                dataset: metadata.dataset, schemaVersion: metadata.schemaVersion, revision: metadata.revision)
        } catch let error as SeedError {
            throw ImportError(error, otherwise: .invalidSeed)
        }
    }

    /// Copies the seed to `destination` (decompressing a `.gz` and hashing on the way), syncs the
    /// copy and checks it: the manifest's size and SHA-256 when there is a manifest, SeedSync's
    /// application id and format, `PRAGMA quick_check`, its tables (the schema's and the
    /// metadata, nothing else: ``SeedFile/structureProblem(_:)``), the rest of the manifest (revision,
    /// dataset, schema, row counts), the content digest when there is no manifest, and
    /// `expectedSchemaVersion`. For a plain seed with a manifest, `quick_check` reads the shipped
    /// file beside the copy instead of the copy after it: the copy's SHA-256 proves the bytes equal.
    ///
    /// - Returns: the copy's metadata.
    /// - Throws: ``ImportError/Code/invalidSeed``, or ``ImportError/Code/storage`` when the copy
    ///   cannot be written (a full disk); `destination` is removed then.
    func copy(to destination: String, expectedSchemaVersion: Int?) throws -> SeedMetadata {
        if let problem { throw problem }
        do {
            return try copyAndCheck(to: destination, expectedSchemaVersion: expectedSchemaVersion)
        } catch let error as SeedError where error.isStorageFailure {
            DatabaseFiles(destination).remove()
            // The volume failed, not the seed: the message names the file that could not be written or read.
            throw ImportError(.storage, "cannot copy the seed \(path) to \(destination): \(error)")
        } catch {
            DatabaseFiles(destination).remove()
            // Name the shipped seed, not the copy, in what the user reads.
            throw error as? ImportError
                ?? ImportError(.invalidSeed, "\(error)".replacingOccurrences(of: destination, with: path))
        }
    }

    private func copyAndCheck(to destination: String, expectedSchemaVersion: Int?) throws -> SeedMetadata {
        DatabaseFiles(destination).remove()
        // A plain seed with a manifest: `quick_check` reads the shipped file on another thread while
        // the copy is made (half of an install's time when it came after), and the copy's SHA-256
        // against the manifest then proves the copy the same bytes as what was checked.
        let sideCheck = manifest != nil && !isCompressed ? QuickCheck(of: path) : nil
        defer { _ = sideCheck?.result() }
        do {
            return try checkCopy(at: destination, expectedSchemaVersion: expectedSchemaVersion, sideCheck: sideCheck)
        } catch {
            // The install fails anyway: no need to read the shipped file to its end first.
            sideCheck?.cancel()
            throw error
        }
    }

    private func checkCopy(at destination: String, expectedSchemaVersion: Int?, sideCheck: QuickCheck?) throws
        -> SeedMetadata
    {
        let digest = try FileCopy.copy(path, to: destination, decompress: isCompressed, limit: manifest?.size ?? .max)
        if let manifest, digest.size != manifest.size || digest.sha256 != manifest.sha256 {
            throw ImportError(
                .invalidSeed,
                "\(path) does not match its manifest: \(digest.size) bytes with SHA-256 \(digest.sha256), the manifest says \(manifest.size) bytes with \(manifest.sha256)"
            )
        }
        let file = try SeedFile(path: destination)
        defer { try? file.close() }
        let metadata = try file.metadata()
        if let problem = try sideCheck.map({ try $0.result().get() }) ?? file.quickCheck() {
            throw ImportError(.invalidSeed, "\(path) is damaged: quick_check found \(problem)")
        }
        if let problem = try file.structureProblem(metadata) {
            throw ImportError(.invalidSeed, "\(path) is not a seed as seed-build writes them: \(problem)")
        }
        if let manifest {
            let mismatches = manifest.mismatches(digest: digest, metadata: metadata, rowCounts: try file.rowCounts())
            guard mismatches.isEmpty else {
                throw ImportError(
                    .invalidSeed,
                    "\(path) does not match its manifest: the manifest says \(mismatches.joined(separator: "; ")); build the seed and its manifest again"
                )
            }
        }
        // Without a manifest, the digest the seed carries is what proves its values intact.
        if manifest == nil { try file.checkContent(metadata) }
        if let expected = expectedSchemaVersion, metadata.schemaVersion > expected {
            throw ImportError(
                .invalidSeed,
                "\(path) has schema version \(metadata.schemaVersion), newer than the \(expected) this app expects")
        }
        return metadata
    }
}

/// `PRAGMA quick_check` of a seed file on a thread of its own, started at once.
///
/// ```swift
/// let check = QuickCheck(of: path)
/// // ... other work ...
/// if let problem = try check.result().get() { ... }
/// ```
private final class QuickCheck: @unchecked Sendable {
    private var outcome: Result<String?, any Error>?
    private var file: SeedFile?
    private var cancelled = false
    private let lock = NSLock()
    private let done = DispatchSemaphore(value: 0)

    init(of path: String) {
        Thread { [self] in
            let result = Result<String?, any Error> {
                let file = try SeedFile(path: path)
                defer {
                    // Out of cancel()'s reach before it is closed: no interrupt of a closed file.
                    lock.withLock { self.file = nil }
                    try? file.close()
                }
                let cancelled = lock.withLock {
                    self.file = file
                    return self.cancelled
                }
                if cancelled { throw CancellationError() }
                return try file.quickCheck()
            }
            lock.withLock { outcome = result }
            done.signal()
        }.start()
    }

    /// Ends the check early: its result is then an error.
    func cancel() {
        lock.withLock {
            cancelled = true
            file?.interrupt()
        }
    }

    /// What the check found (`nil`: no problem), waiting for it to end. Called from one thread at
    /// a time; every call gets the same result.
    func result() -> Result<String?, any Error> {
        lock.lock()
        if let outcome {
            lock.unlock()
            return outcome
        }
        lock.unlock()
        done.wait()
        done.signal()  // for a later call
        return lock.withLock { outcome! }
    }
}
