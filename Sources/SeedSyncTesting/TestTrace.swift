import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What the test helpers are waiting for now, printed to standard error when the test process
/// gets `SIGUSR1`.
///
/// A test that hangs is a suspended task, and a suspended task is on no thread's stack: a thread
/// dump of a hung run shows idle threads only. So the helpers that open stores, servers and
/// connections name each step they take, and `scripts/lib/watchdog.sh` sends `SIGUSR1` to a
/// test run that passed its time limit: the steps still open, with how long each has been open,
/// say where the wait is (opening a store, its test body, closing its pool, a server's shutdown).
///
/// ```swift
/// try await TestTrace.step("PostgreSQL store \(location.database): closing") { try await close() }
/// ```
public enum TestTrace {
    private final class Steps: @unchecked Sendable {
        let lock = NSLock()
        var open: [UInt64: (name: String, since: ContinuousClock.Instant)] = [:]
        var last: UInt64 = 0
        var source: (any DispatchSourceSignal)?
    }

    private static let steps: Steps = {
        let steps = Steps()
        signal(SIGUSR1, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGUSR1, queue: .global())
        source.setEventHandler { FileHandle.standardError.write(Data(report().utf8)) }
        source.resume()
        steps.source = source
        return steps
    }()

    /// Runs `body` as the step `name` of the current test, open until it returns or throws.
    public static func step<T>(_ name: String, _ body: () async throws -> T) async rethrows -> T {
        let steps = steps
        let id = steps.lock.withLock {
            steps.last += 1
            steps.open[steps.last] = (Test.current.map { "\($0.name): \(name)" } ?? name, .now)
            return steps.last
        }
        defer { _ = steps.lock.withLock { steps.open.removeValue(forKey: id) } }
        return try await body()
    }

    /// The open steps, oldest first, a line each.
    public static func report() -> String {
        let now = ContinuousClock.now
        let open = steps.lock.withLock { steps.open.sorted { $0.key < $1.key }.map(\.value) }
        let lines = open.map { "  open for \(Int((now - $0.since).components.seconds)) s: \($0.name)\n" }
        return "the test helpers' open steps (\(open.count)):\n" + lines.joined()
    }
}
