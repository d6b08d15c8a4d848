import Foundation
import SeedSyncImport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Progress on stderr, one line rewritten in place: the revision reached out of the server's,
/// with installs, replacements and retries on lines of their own.
final class ImportProgress: @unchecked Sendable {
    private let enabled: Bool
    private let lock = NSLock()

    static var stderrIsTerminal: Bool { isatty(STDERR_FILENO) != 0 }

    init(enabled: Bool) {
        self.enabled = enabled
    }

    func handle(_ event: ImportEvent) {
        guard enabled, let text = Self.text(for: event) else { return }
        lock.withLock { FileHandle.standardError.write(Data(text.utf8)) }
    }

    func end() {
        guard enabled else { return }
        lock.withLock { FileHandle.standardError.write(Data("\u{1B}[K".utf8)) }
    }

    /// `bytes` in MiB with one decimal.
    static func size(_ bytes: Int64) -> String {
        String(format: "%.1f MiB", Double(bytes) / 1_048_576)
    }

    /// `seconds` as `42 s` or `3 min 12 s`.
    static func duration(_ seconds: Double) -> String {
        let whole = Int(seconds.rounded(.up))
        return whole < 60 ? "\(whole) s" : "\(whole / 60) min \(whole % 60) s"
    }

    private static func text(for event: ImportEvent) -> String? {
        switch event {
        case .installed(let revision):
            "installed the seed at revision \(revision)\n"
        case .replaced(let replacement):
            "\rreplacing the database (\(replacement.reason.rawValue)) with the \(replacement.source.rawValue) at revision \(replacement.toRevision)\u{1B}[K\n"
        case .foundPublishedSeed(let url, let revision):
            "\rthe server offers a published seed at revision \(revision): \(url.absoluteString)\u{1B}[K\n"
        case .downloadingSeed(let download):
            "\rdownloading the seed: \(Self.size(download.received)) of \(Self.size(download.total))\(download.secondsLeft.map { ", \(Self.duration($0)) left" } ?? "")\u{1B}[K"
                + (download.received == download.total ? "\n" : "")
        case .choseWayIn(let way):
            "\r\(way)\u{1B}[K\n"
        case .downloadingSnapshot(let minRevision):
            "\rdownloading a full snapshot (the server's history starts at \(minRevision))\u{1B}[K\n"
        case .progress(let revision, let serverRevision):
            "\rsyncing: revision \(revision) of \(serverRevision)\u{1B}[K"
        case .retrying(let attempt, let delay, let reason):
            "\rretrying in \(String(format: "%.1f", delay)) s after attempt \(attempt) failed: \(reason)\u{1B}[K\n"
        case .caughtUp(let revision):
            "\rcaught up at revision \(revision)\u{1B}[K\n"
        case .migrating(let from, let to):
            "\rmigrating the database from schema version \(from) to \(to)\u{1B}[K\n"
        case .migrated(let migration):
            "\rmigrated to schema version \(migration.toVersion): \(migration.changes.joined(separator: ", ")) (\(migration.rowsDownloaded) rows downloaded)\u{1B}[K\n"
        case .scopesGained(let gain):
            "\rthe token grants \(gain.values.compactMap(\.keyString).joined(separator: ", ")) too: \(gain.rowsDownloaded) rows downloaded, now at revision \(gain.toRevision)\u{1B}[K\n"
        case .seedSkipped(let revision, let minRevision):
            "\rthe seed (revision \(revision)) is older than the server's history (from \(minRevision)): it is not installed\u{1B}[K\n"
        case .seedRejected:
            nil  // printed as a warning by the command, whatever the terminal
        case .applied, .finished, .pushed, .conflict, .rejected, .merged, .overwritten:
            nil  // outcomes of pushes are printed by the command, whatever the terminal
        }
    }
}
