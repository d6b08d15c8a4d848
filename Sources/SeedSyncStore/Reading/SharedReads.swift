import Foundation
import SeedSyncModel

/// Concurrent reads of the same thing, shared without serving anything older than a request.
///
/// Reads of one key run one at a time. A caller joins the next read of its key that has not
/// started yet, so every caller gets a result read after it asked, never one that began
/// before (a commit it may already know of would be missing). A crowd of callers then costs two
/// reads, not one each: the one running when they came, and one for all of them. The store
/// shares its state read this way (every `/v1/sync` needs one) and the log reads of a revision
/// range (after a commit, every client asks for the same new revisions at once); the server
/// shares the change feed its woken live sync requests read.
///
/// ```swift
/// let reads = SharedReads<Int, LogState>()
/// let state = try await reads.value(for: 0) { try await readState() }
/// ```
///
/// A read runs in a task of its own: a caller cancelled while others wait for its read cancels
/// nothing of theirs.
package final class SharedReads<Key: Hashable & Sendable, Value: Sendable>: @unchecked Sendable {
    private enum Turn: Sendable {
        case read
        case done(Result<Value, any Error>)
    }

    /// For each key with a read running, the callers waiting for the next read.
    private var waiting: [Key: [CheckedContinuation<Turn, Never>]] = [:]
    private let lock = NSLock()

    package init() {}

    /// The callers of `key` waiting for the next read (for tests).
    package func waiters(for key: Key) -> Int {
        lock.withLock { waiting[key]?.count ?? 0 }
    }

    /// The value of a `read` of `key` that started after this call.
    package func value(for key: Key, read: @escaping @Sendable () async throws -> Value) async throws -> Value {
        let turn = await withCheckedContinuation { (continuation: CheckedContinuation<Turn, Never>) in
            let idle = lock.withLock {
                guard waiting[key] != nil else {
                    waiting[key] = []
                    return true
                }
                waiting[key]!.append(continuation)
                return false
            }
            if idle { continuation.resume(returning: .read) }
        }
        if case .done(let result) = turn { return try result.get() }
        // Whoever waits now asked before this read starts: it is theirs too.
        let sharers = lock.withLock { waiting.updateValue([], forKey: key)! }
        let result = await Task { try await read() }.result
        for sharer in sharers { sharer.resume(returning: .done(result)) }
        let next = lock.withLock { () -> CheckedContinuation<Turn, Never>? in
            guard let first = waiting[key]?.first else {
                waiting[key] = nil
                return nil
            }
            waiting[key]!.removeFirst()
            return first
        }
        next?.resume(returning: .read)
        return try result.get()
    }
}
