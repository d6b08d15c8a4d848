import Foundation
import SeedSyncModel

/// Encoded change sets this process already read, by schema version and revision, up to a byte
/// capacity: both stores keep one for their change feeds.
///
/// A committed revision never changes (compaction and bulk revisions only remove history, and
/// `minRevision` is checked on every request), so a change set read once can be served again
/// without reading its rows: clients a few revisions behind, the common case, are then served
/// from memory. When full, the entries added first go first.
///
/// ```swift
/// let cache = ChangeSetCache(capacity: 64 << 20)
/// var feed = ChangeFeed.Builder(after: 41, byteBudget: 1 << 20)
/// cache.fill(&feed, through: 57, version: 1)   // 42, 43, … while cached
/// cache.insert(readFromTheLog, version: 1)     // what the store read after feed.revision
/// ```
package final class ChangeSetCache: @unchecked Sendable {
    private struct Key: Hashable {
        var version: Int
        var revision: Int64
    }

    private struct Entries {
        var byRevision: [Key: EncodedChangeSet] = [:]
        var order: [Key] = []
        var next = 0
        var bytes = 0
    }

    private var entries = Entries()
    private let lock = NSLock()
    package let capacity: Int

    package init(capacity: Int) {
        self.capacity = capacity
    }

    /// Adds the cached change sets that follow `feed`, through revision `last`, until one is
    /// missing or the feed is full.
    package func fill(_ feed: inout ChangeFeed.Builder, through last: Int64, version: Int) {
        lock.withLock {
            while feed.revision < last,
                let changeSet = entries.byRevision[Key(version: version, revision: feed.revision + 1)],
                feed.append(changeSet)
            {}
        }
    }

    /// Adds change sets read from the log in `version`; one larger than the capacity is left out.
    package func insert(_ changeSets: [EncodedChangeSet], version: Int) {
        lock.withLock {
            for changeSet in changeSets {
                let key = Key(version: version, revision: changeSet.revision)
                guard entries.byRevision[key] == nil, changeSet.json.count <= capacity else { continue }
                entries.byRevision[key] = changeSet
                entries.order.append(key)
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
