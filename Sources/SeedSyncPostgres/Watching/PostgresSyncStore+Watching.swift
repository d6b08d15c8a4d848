import Logging
import NIOConcurrencyHelpers
package import PostgresNIO
import SeedSyncModel
import SeedSyncStore

extension PostgresSyncStore {
    /// How often the revision is read besides the notifications: the fallback for notifications a
    /// dropped connection lost before it was noticed.
    static let watchFallbackInterval: Duration = .seconds(5)

    /// Reports every revision any writer commits (this process, another `seed-server`, psql on a
    /// served table) as PostgreSQL delivers its `NOTIFY` (sent by `seedsync._revision()` inside
    /// the writing transaction, delivered at its commit), on one connection of its own outside
    /// the pool, plus a read every 5 seconds. A lost connection is opened again
    /// (after 0.25 s, doubling to 5 s), followed by a read for what it missed.
    public func watchRevisions(_ onRevision: @escaping @Sendable (Int64) -> Void) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.listenForRevisions(onRevision) }
            group.addTask { await self.pollRevisions(every: Self.watchFallbackInterval, onRevision) }
            await group.waitForAll()
        }
    }

    /// `LISTEN`s on `CaptureSQL.revisionChannel` until cancelled, connecting again when the
    /// connection fails.
    private func listenForRevisions(_ onRevision: @escaping @Sendable (Int64) -> Void) async {
        var delay: Duration = .milliseconds(250)
        while !Task.isCancelled {
            do {
                let listening = OnceFlag()
                defer { if listening.isSet { delay = .milliseconds(250) } }
                try await Self.withConnection(to: location, logger: logger) { connection in
                    try await Self.untilClosed(connection) { [self] in
                        try await connection.listen(on: CaptureSQL.revisionChannel) { notifications in
                            // What committed before the `LISTEN` took effect.
                            onRevision(try await revisions().revision)
                            listening.set()
                            for try await notification in notifications {
                                if let revision = Int64(notification.payload) { onRevision(revision) }
                            }
                        }
                    }
                }
            } catch {
                guard !Task.isCancelled else { return }
                logger.warning(
                    "revision notifications interrupted; listening again",
                    metadata: ["error": "\(error)", "retryIn": "\(delay)"])
            }
            try? await Task.sleep(for: delay)
            delay = min(delay * 2, .seconds(5))
        }
    }

    /// Runs `body` until it returns or `connection` closes, whichever comes first.
    ///
    /// postgres-nio 1.33 can lose a `LISTEN` sent as its connection closes (its continuation is
    /// never resumed), and cancelling it does not help: the watch, and the server's shutdown that
    /// waits for it, would wait forever. So `body` runs in a task of its own, cancelled when the
    /// connection closes or this call is cancelled; a `LISTEN` lost that way is left suspended.
    ///
    /// - Throws: what `body` throws, `ClosedConnection` when the connection closed first, or
    ///   `CancellationError`.
    package static func untilClosed(
        _ connection: PostgresConnection, _ body: @escaping @Sendable () async throws -> Void
    ) async throws {
        let task = Task { try await body() }
        defer { task.cancel() }
        let outcome = Outcome()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                outcome.await(continuation)
                Task { outcome.settle(await task.result) }
                connection.closeFuture.whenComplete { _ in outcome.settle(.failure(ClosedConnection())) }
            }
        } onCancel: {
            outcome.settle(.failure(CancellationError()))
        }
    }
}

/// The first of several results, handed to one continuation whenever it arrives.
private final class Outcome: Sendable {
    private enum State {
        case pending
        case awaiting(CheckedContinuation<Void, any Error>)
        case settled(Result<Void, any Error>)
        case done
    }
    private let state = NIOLockedValueBox(State.pending)

    func await(_ continuation: CheckedContinuation<Void, any Error>) {
        let result: Result<Void, any Error>? = state.withLockedValue { state in
            guard case .settled(let result) = state else {
                state = .awaiting(continuation)
                return nil
            }
            state = .done
            return result
        }
        if let result { continuation.resume(with: result) }
    }

    func settle(_ result: Result<Void, any Error>) {
        let continuation: CheckedContinuation<Void, any Error>? = state.withLockedValue { state in
            switch state {
            case .pending:
                state = .settled(result)
                return nil
            case .awaiting(let continuation):
                state = .done
                return continuation
            case .settled, .done:
                return nil
            }
        }
        continuation?.resume(with: result)
    }
}
