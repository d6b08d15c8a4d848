import Foundation
import SeedSyncBuild
import SeedSyncClient

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Progress on stderr, one line rewritten in place: rows and bytes of the current type, the rate,
/// and an ETA when the server reported row counts. Retries are reported too.
final class ProgressPrinter: @unchecked Sendable {
    private let enabled: Bool
    private let lock = NSLock()
    private var totals: [String: Int] = [:]
    private var type = ""
    private var rows = 0
    private var bytes: Int64 = 0
    private var started = Date()

    static var stderrIsTerminal: Bool { isatty(STDERR_FILENO) != 0 }

    init(enabled: Bool) {
        self.enabled = enabled
    }

    func handle(_ event: BuildEvent) {
        guard enabled else { return }
        lock.withLock {
            switch event {
            case .started(let revision, let rowCounts, let resumed):
                totals = rowCounts ?? [:]
                write("\(resumed ? "resuming" : "downloading") at revision \(revision)\n")
            case .page(let type, let rows, let bytes):
                if type != self.type { startType(type) }
                self.rows += rows
                self.bytes += bytes
                write("\r\(line())")
            case .caughtUp(let changeSets, let revision):
                if !type.isEmpty { startType("") }
                write("\rcatching up: \(changeSets) change sets applied, revision \(revision)")
            case .finishing:
                write("\rfinishing: checks, VACUUM, hashing\u{1B}[K\n")
            }
        }
    }

    func retry(attempt: Int, error: SyncClientError, delay: Double) {
        guard enabled else { return }
        lock.withLock {
            write("\nretrying in \(String(format: "%.1f", delay)) s after attempt \(attempt) failed: \(error)\n")
        }
    }

    func end() {
        guard enabled else { return }
        lock.withLock { write("\u{1B}[K") }
    }

    private func startType(_ next: String) {
        if !type.isEmpty { write("\n") }
        type = next
        rows = 0
        bytes = 0
        started = Date()
    }

    private func line() -> String {
        let elapsed = max(Date().timeIntervalSince(started), 0.001)
        let rate = Double(rows) / elapsed
        var text = "\(type): \(rows)"
        if let total = totals[type] { text += "/\(total)" }
        text += " rows, \(String(format: "%.1f", Double(bytes) / 1_048_576)) MiB, \(Int(rate)) rows/s"
        if let total = totals[type], rate > 0, total > rows {
            text += ", ETA \(Int((Double(total - rows) / rate).rounded())) s"
        }
        return text + "\u{1B}[K"
    }

    private func write(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }
}
