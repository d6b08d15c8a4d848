public import Foundation
import SeedSyncClient
import SeedSyncModel
import SeedSyncSQL
import SeedSyncSeed

/// How far the download of a published seed is: ``ImportEvent/downloadingSeed(_:)``.
public struct SeedDownload: Sendable, Hashable {
    /// The seed file's address.
    public var url: URL
    /// Bytes in the partial file, those of earlier attempts and runs included.
    public var received: Int64
    /// The file's size, from its manifest.
    public var total: Int64
    /// Where this attempt started: 0, or the bytes an earlier one had left.
    public var resumedAt: Int64
    /// Seconds left at the speed of this attempt so far; `nil` until it has a speed.
    public var secondsLeft: Double?
}

/// A seed published at an address (``SeedImporter/Configuration/seedURL``): downloaded with its
/// manifest into `DATABASE.seed/`, then used as a shipped seed.
///
/// 1. The manifest is fetched from beside the seed (`NAME.manifest.json` for `NAME` or `NAME.gz`,
///    at most 1 MiB) and, with trusted keys, its signature checked before any byte of the seed
///    is asked for.
/// 2. The seed file is downloaded, resuming what an earlier attempt or run left
///    (``FileDownload``), bounded by the size the manifest gives it (the `.gz` copy's for a `.gz`
///    address).
/// 3. Its SHA-256 must be the manifest's: bytes that are not (a file changed on the server while
///    it was cut, a damaged cache) are removed, and the run fails; the next starts afresh.
///
/// The checks of a shipped seed (``ShippedSeed``) then run on the downloaded file as on any other.
struct PublishedSeed {
    let url: URL
    /// The folder it is downloaded into, `DATABASE.seed`.
    let folder: String
    let trustedKeys: TrustedKeys
    /// The SHA-256 the server registered the seed with, when it offered it: the manifest must
    /// describe that seed, whatever the host serves.
    var registered: String? = nil

    /// The manifest's address: beside the seed, named as ``SeedManifest/path(forSeed:)`` names it.
    var manifestURL: URL {
        url.deletingLastPathComponent().appendingPathComponent(SeedManifest.path(forSeed: url.lastPathComponent))
    }

    /// Where the seed file is downloaded: the folder, under the address's file name.
    var path: String { URL(fileURLWithPath: folder).appendingPathComponent(url.lastPathComponent).path }

    /// The manifest as fetched from beside the seed, checked, and what it says of the file at the address.
    struct Description {
        let data: Data
        let manifest: SeedManifest
        /// The size and SHA-256 of the file at the address (``expected(by:)``).
        let size: Int64
        let sha256: String
    }

    /// Downloads the manifest and checks it: parsed, signed by a trusted key (with trusted keys),
    /// the registered seed's (when offered), describing the file at the address.
    func describe(with client: SyncClient) async throws -> Description {
        guard !["", "/", ".", ".."].contains(url.lastPathComponent) else {
            throw ImportError(.invalidSeed, "the seed address \(url.absoluteString) names no file")
        }
        let manifestData = try await client.fetch(manifestURL, limit: 1 << 20)
        let manifest: SeedManifest
        do {
            manifest = try SeedManifest.decode(manifestData, from: manifestURL.absoluteString)
            if !trustedKeys.isEmpty {
                try trustedKeys.check(manifestJSON: manifestData, manifest: manifest, of: url.absoluteString)
            }
        } catch let error as SeedError {
            throw ImportError(error, otherwise: .invalidSeed)
        }
        if let registered, manifest.sha256 != registered {
            throw ImportError(
                .invalidSeed,
                "the manifest at \(manifestURL.absoluteString) describes the seed \(manifest.sha256), not \(registered), which the server registered at that address; nothing was downloaded"
            )
        }
        let (size, sha256) = try expected(by: manifest)
        return Description(data: manifestData, manifest: manifest, size: size, sha256: sha256)
    }

    /// Downloads the manifest (unless `described` already) and the seed (resuming), checks them:
    /// the seed, ready to install.
    func fetch(with client: SyncClient, described: Description? = nil, emit: @escaping @Sendable (ImportEvent) -> Void)
        async throws -> ShippedSeed
    {
        let description: Description
        if let described { description = described } else { description = try await describe(with: client) }
        let (size, sha256) = (description.size, description.sha256)
        try FileSystem.createFolder(for: path)
        let manifestData = description.data
        let download = FileDownload(url: url, path: path, size: size, identity: sha256)
        try FileSystem.write(manifestData, to: SeedManifest.path(forSeed: path))
        try await client.download(download, progress: Self.reporter(url: url, emit: emit))
        let digest = try FileDigest(ofFile: path)
        guard digest.size == size, digest.sha256 == sha256 else {
            download.remove()
            throw ImportError(
                .invalidSeed,
                "the seed downloaded from \(url.absoluteString) does not match its manifest: \(digest.size) bytes with SHA-256 \(digest.sha256), the manifest says \(size) bytes with \(sha256); it was removed, the next run downloads it again"
            )
        }
        try? FileManager.default.removeItem(atPath: download.resumePath)
        return ShippedSeed(path: path, trustedKeys: trustedKeys)
    }

    /// The size and SHA-256 the manifest gives the file at the address: the `.gz` copy's for a
    /// `.gz` address, the seed's otherwise.
    private func expected(by manifest: SeedManifest) throws -> (Int64, String) {
        guard url.lastPathComponent.hasSuffix(".gz") else { return (manifest.size, manifest.sha256) }
        guard let gzip = manifest.gzip else {
            throw ImportError(
                .invalidSeed,
                "\(url.absoluteString) is a .gz address, but its manifest \(manifestURL.absoluteString) describes no gzip copy"
            )
        }
        return (gzip.size, gzip.sha256)
    }

    /// The newest of the seeds `offered` (`GET /v1/seeds`) that a fresh app of `version` can
    /// install and catch up from, with its address: registered with one (resolved against `base`,
    /// the server's address, when relative), not retired, in `version`, its revision still in the
    /// server's history, and holding the rows of the scope values the token grants, no fewer and
    /// no more (`server.scopes`; every value's for a token of every value).
    static func newest(of offered: [RegisteredSeed], for server: SchemaInfo, version: Int, base: URL)
        -> (URL, RegisteredSeed)?
    {
        let granted = server.scopes.map { ScopeGrant.only($0) } ?? .all
        let usable = offered.compactMap { seed -> (URL, RegisteredSeed)? in
            guard seed.retiredAt == nil, seed.schemaVersion == version, seed.revision >= server.minRevision,
                seed.revision <= server.revision, (seed.scopes.map { ScopeGrant.only($0) } ?? .all) == granted,
                let text = seed.url, let url = address(text, base: base)
            else { return nil }
            return (url, seed)
        }
        return usable.max { $0.1.revision < $1.1.revision }
    }

    /// `text` as an address: absolute (`http` or `https`), or relative to `base`.
    private static func address(_ text: String, base: URL) -> URL? {
        if SeedRegistration.isValidURL(text) { return URL(string: text) }
        guard URL(string: text)?.scheme == nil, !text.hasPrefix("/"), !text.contains("..") else { return nil }
        return base.appendingPathComponent(text)
    }

    /// Removes what a download left.
    static func remove(_ folder: String) {
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// Turns a download's progress into events: at the start of each attempt, every mebibyte, at the end.
    private static func reporter(url: URL, emit: @escaping @Sendable (ImportEvent) -> Void)
        -> @Sendable (DownloadProgress) -> Void
    {
        let last = LockedValue<Int64>(-1)
        let started = LockedValue<(ContinuousClock.Instant, Int64)?>(nil)
        return { progress in
            if progress.received == progress.resumedAt { started.set((.now, progress.resumedAt)) }
            guard
                progress.received == progress.resumedAt || progress.received == progress.total
                    || progress.received - last.get() >= 1 << 20
            else { return }
            last.set(progress.received)
            var secondsLeft: Double?
            if let (start, from) = started.get(), progress.received > from {
                let elapsed = (ContinuousClock.now - start).seconds
                secondsLeft = elapsed * Double(progress.total - progress.received) / Double(progress.received - from)
            }
            emit(
                .downloadingSeed(
                    SeedDownload(
                        url: url, received: progress.received, total: progress.total, resumedAt: progress.resumedAt,
                        secondsLeft: secondsLeft)))
        }
    }
}
