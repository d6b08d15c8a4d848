import Logging
import PostgresNIO
import SeedSyncModel

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
                try await Self.withConnection(to: location, logger: logger) { connection in
                    try await connection.listen(on: CaptureSQL.revisionChannel) { notifications in
                        // What committed before the `LISTEN` took effect.
                        onRevision(try await revisions().revision)
                        delay = .milliseconds(250)
                        for try await notification in notifications {
                            if let revision = Int64(notification.payload) { onRevision(revision) }
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
}
