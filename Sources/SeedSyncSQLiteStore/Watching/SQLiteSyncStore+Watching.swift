import Foundation
import SeedSyncModel
import SeedSyncStore

extension SQLiteSyncStore {
    /// How often ``watchRevisions(_:)`` reads the file for commits of other processes.
    static let watchInterval: Duration = .milliseconds(250)

    /// Reports revisions this store commits the moment they commit, and those other processes
    /// commit to the same file (`seed-server mutate` or `load`, a second server) within 250 ms,
    /// by one read of the state row every 250 ms however many requests wait.
    public func watchRevisions(_ onRevision: @escaping @Sendable (Int64) -> Void) async {
        let id = watches.add(onRevision)
        defer { watches.remove(id) }
        await pollRevisions(every: Self.watchInterval, onRevision)
    }
}

/// The running ``SQLiteSyncStore/watchRevisions(_:)`` calls, told of every revision this process
/// commits right after its transaction commits.
final class RevisionWatches: @unchecked Sendable {
    private let lock = NSLock()
    private var watches: [UUID: @Sendable (Int64) -> Void] = [:]

    func add(_ watch: @escaping @Sendable (Int64) -> Void) -> UUID {
        let id = UUID()
        lock.withLock { watches[id] = watch }
        return id
    }

    func remove(_ id: UUID) {
        lock.withLock { _ = watches.removeValue(forKey: id) }
    }

    /// Tells every watch that `revision` committed.
    func publish(_ revision: Int64) {
        for watch in lock.withLock({ Array(watches.values) }) { watch(revision) }
    }
}
