import Foundation

/// How a fresh app got in (``ImportReport/wayIn``, ``ImportEvent/choseWayIn(_:)``): the ways it
/// weighed, with the bytes each would download, and the one it took.
///
/// **Design.** A fresh app (no database) with a server to ask weighs every way it has: the seed it
/// ships and its catch-up, the newest seed the server offers (its file, then its catch-up), and
/// snapshot pages. The sizes are the ones on the wire: a seed's file as its manifest gives it (the
/// `.gz` copy's for a `.gz` address), a shipped seed's as nothing, the change sets and pages as
/// the server estimates them gzipped (`GET /v1/sizes`, `SyncClient.sizes(after:schemaVersion:)`).
/// The seed way with the fewest bytes is taken (the shipped seed on a tie), unless snapshot pages
/// would take less than ``snapshotShare`` of its bytes: a seed installs about five times faster than
/// pages of the same size (nothing to parse or insert, `docs/PERFORMANCE.md` case 13), and the
/// pages' size is an estimate. A server that cannot say (one that predates `/v1/sizes`) leaves the
/// order the importer had before: the shipped seed, else the offered one, else pages.
///
/// ```json
/// {"taken": {"source": {"kind": "published-seed", "location": "https://cdn.example.com/seeds/events.sqlite.gz"},
///            "revision": 41200, "fileBytes": 31800000, "catchUpBytes": 96000},
///  "weighed": [...]}
/// ```
public struct WayIn: Sendable, Hashable, Codable {
    /// One way in, and what it would download.
    public struct Option: Sendable, Hashable, Codable {
        public var source: InstallSource
        /// The seed's revision; `nil` for snapshot pages.
        public var revision: Int64?
        /// The seed file to download (0 for a shipped seed), or the snapshot's pages.
        public var fileBytes: Int64
        /// The change sets from the seed's revision to the server's newest (0 for pages: they catch
        /// up from about the revision they were read at).
        public var catchUpBytes: Int64
        /// Everything the way would download.
        public var bytes: Int64 { fileBytes + catchUpBytes }

        public init(source: InstallSource, revision: Int64?, fileBytes: Int64, catchUpBytes: Int64) {
            self.source = source
            self.revision = revision
            self.fileBytes = fileBytes
            self.catchUpBytes = catchUpBytes
        }
    }

    /// The way taken.
    public var taken: Option
    /// Every way weighed, the one taken among them, in the order they were weighed.
    public var weighed: [Option]

    /// The share of a seed way's bytes under which snapshot pages are taken instead.
    public static let snapshotShare = 0.75

    /// The way to take of `options`, or `nil` when there are none: the seed way with the fewest
    /// bytes (the first on a tie), unless snapshot pages take less than ``snapshotShare`` of it.
    public init?(choosingFrom options: [Option]) {
        let seeds = options.filter { $0.source.kind != .snapshot }
        let pages = options.first { $0.source.kind == .snapshot }
        let seed = seeds.min { $0.bytes < $1.bytes }
        guard let taken = Self.take(seed: seed, pages: pages) else { return nil }
        self.taken = taken
        weighed = options
    }

    private static func take(seed: Option?, pages: Option?) -> Option? {
        guard let seed else { return pages }
        guard let pages, Double(pages.bytes) < Double(seed.bytes) * snapshotShare else { return seed }
        return pages
    }
}

extension WayIn: CustomStringConvertible {
    /// The way taken and the others weighed, with their bytes:
    /// `took the published seed at revision 41200, 30.4 MiB (file 30.3 MiB, catch-up 0.1 MiB); weighed: shipped seed at revision 30000, 48.6 MiB (catch-up); snapshot, 28.8 MiB`.
    public var description: String {
        let others = weighed.filter { $0 != taken }.map(\.description)
        return "took the \(taken)" + (others.isEmpty ? "" : "; weighed: " + others.joined(separator: "; "))
    }
}

extension WayIn.Option: CustomStringConvertible {
    public var description: String {
        let name = source.kind.rawValue.replacingOccurrences(of: "-", with: " ")
        let at = revision.map { " at revision \($0)" } ?? ""
        let parts =
            switch (fileBytes, catchUpBytes) {
            case (_, 0): ""
            case (0, _): " (catch-up)"
            default: " (file \(Self.mebibytes(fileBytes)), catch-up \(Self.mebibytes(catchUpBytes)))"
            }
        return "\(name)\(at), \(Self.mebibytes(bytes))\(parts)"
    }

    /// `bytes` in MiB with one decimal, or in KiB below one MiB.
    static func mebibytes(_ bytes: Int64) -> String {
        bytes < 1 << 20
            ? String(format: "%.1f KiB", Double(bytes) / 1024) : String(format: "%.1f MiB", Double(bytes) / 1_048_576)
    }
}
