import SeedSyncModel
import Synchronization

/// Encoded change sets this process already assembled, by revision, up to a byte capacity.
///
/// A committed revision never changes (compaction and bulk revisions only remove history, and
/// `minRevision` is checked on every request), so a change set read once can be served again
/// without reading and assembling its rows: clients a few revisions behind, the common case, are
/// then served from memory. When full, the entries added first go first.
final class ChangeSetCache: Sendable {
    private struct Entries {
        var byRevision: [Int64: EncodedChangeSet] = [:]
        var order: [Int64] = []
        var next = 0
        var bytes = 0
    }

    private let entries = Mutex(Entries())
    let capacity: Int

    init(capacity: Int) {
        self.capacity = capacity
    }

    /// The cached change sets after `revision`, consecutive, at most `limit` of them and
    /// `byteBudget` bytes (one at least, when the first is cached).
    func prefix(after revision: Int64, limit: Int, byteBudget: Int) -> (changeSets: [EncodedChangeSet], bytes: Int) {
        entries.withLock { entries in
            var found: [EncodedChangeSet] = []
            var bytes = 0
            var next = revision + 1
            while found.count < limit, let changeSet = entries.byRevision[next] {
                if !found.isEmpty, bytes + changeSet.json.count > byteBudget { break }
                bytes += changeSet.json.count
                found.append(changeSet)
                next += 1
            }
            return (found, bytes)
        }
    }

    func insert(_ changeSets: [EncodedChangeSet]) {
        entries.withLock { entries in
            for changeSet in changeSets where entries.byRevision[changeSet.revision] == nil && changeSet.json.count <= capacity {
                entries.byRevision[changeSet.revision] = changeSet
                entries.order.append(changeSet.revision)
                entries.bytes += changeSet.json.count
            }
            while entries.bytes > capacity, entries.next < entries.order.count {
                if let evicted = entries.byRevision.removeValue(forKey: entries.order[entries.next]) {
                    entries.bytes -= evicted.json.count
                }
                entries.next += 1
            }
            if entries.next > 4_096, entries.next * 2 > entries.order.count {
                entries.order.removeFirst(entries.next)
                entries.next = 0
            }
        }
    }
}
