package import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A file to download whole, resumably: from `url` into `path`, exactly `size` bytes.
///
/// The bytes arrive in `path` itself; beside it, `path.resume` records where they came from (the
/// address, the file's ``identity`` and the server's validator, its `ETag` or `Last-Modified`).
/// A download that was cut (a dropped connection, a stall, a killed process) continues where the
/// file ends with `Range: bytes=N-` and `If-Range: <validator>`: a server that has since changed
/// the file answers 200 with all of it, and the download starts over; a server without ranges
/// does the same. A partial file of another identity or address starts over too.
///
/// ```swift
/// let download = FileDownload(
///     url: URL(string: "https://cdn.example.com/seeds/events.sqlite.gz")!,
///     path: "/app/events.sqlite.download", size: 48_211_002, identity: manifest.gzip!.sha256)
/// try await client.download(download) { print("\($0.received) of \($0.total) bytes") }
/// ```
///
/// The caller proves the bytes (a SHA-256 against a manifest): the download only ensures their number.
package struct FileDownload: Sendable {
    package var url: URL
    package var path: String
    /// The file's exact size: a longer body is refused, a shorter one resumed.
    package var size: Int64
    /// What the bytes are, as the caller knows them (their SHA-256): a partial file recorded for
    /// another identity is discarded.
    package var identity: String

    package init(url: URL, path: String, size: Int64, identity: String) {
        self.url = url
        self.path = path
        self.size = size
        self.identity = identity
    }

    /// The record of where the partial file's bytes came from.
    package var resumePath: String { path + ".resume" }

    /// Removes the partial file and its record.
    package func remove() {
        try? FileManager.default.removeItem(atPath: path)
        try? FileManager.default.removeItem(atPath: resumePath)
    }
}

/// How far a ``FileDownload`` is.
package struct DownloadProgress: Sendable, Hashable {
    /// Bytes in the file so far, those of earlier attempts included.
    package var received: Int64
    package var total: Int64
    /// Where this attempt started: 0, or the size of the partial file it resumed.
    package var resumedAt: Int64
}

/// What `path.resume` holds.
struct ResumeRecord: Codable, Equatable {
    var url: String
    var identity: String
    /// The `ETag` (strong) or `Last-Modified` of the answer the bytes came from.
    var validator: String?
}
