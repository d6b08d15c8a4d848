import Crypto
import Foundation
public import SeedSyncModel

/// Where a store keeps its history chain (``HistoryChain``): one value per revision, written once.
///
/// A store implements these reads and writes on a table of its own (`_seedsync_chain`,
/// `seedsync._chain`); ``HistoryLedger`` computes the values from its log, the same way for every store.
package protocol HistoryChainRecords: SyncStore {
    /// The stored values of `revisions` (those that have one).
    func storedChains(at revisions: [Int64]) async throws -> [(Int64, HistoryChain)]
    /// The newest stored value at or below `revision`.
    func newestStoredChain(atOrBelow revision: Int64) async throws -> (Int64, HistoryChain)?
    /// Stores `values`; a revision that has a value keeps it (a concurrent writer computed the same).
    func storeChains(_ values: [(Int64, HistoryChain)]) async throws
    /// The values this process has read or computed, answered from memory.
    var chainCache: HistoryChainCache { get }
}

/// Computes a store's history chain as its log is read, for every writer alike.
///
/// **Design.** The value at revision `R` is `SHA-256(value at R−1 ‖ JSON of change set R)`, the
/// JSON as the store serves it in its newest schema version when the value is computed. The
/// value where the stored chain starts (the log's `minRevision` when no value is stored at or
/// after it: a new store, or a log that a bulk write emptied behind the chain) is 32 random
/// bytes, so two stores, or a store and a restored copy that wrote other revisions since, never
/// agree by chance. Values are computed when first asked for, from the newest stored one, and
/// stored; a stored value never changes. So the store computes the chain of writers it does not
/// see (psql on PostgreSQL) the first time it reads their revisions, and every server process on
/// one database agrees: the values are a function of the stored ones and the log.
///
/// A restore or a lossy crash takes the values of the lost revisions with them (they were written
/// after those revisions, in the same database), and the revisions written again get new values.
/// The values a process has read are kept in memory (``HistoryChainCache``), on the assumption the
/// process's change sets are kept on: a committed revision never changes (restart the server after
/// a restore, `docs/PROTOCOL.md` §5).
///
/// ```swift
/// let values = try await HistoryLedger(store).chains(at: [41, 44, 57])
/// values[41]  // the chain at revision 41, if the log still reaches it
/// ```
package struct HistoryLedger<Records: HistoryChainRecords>: Sendable {
    let records: Records
    /// Change sets read per step of an extension.
    let batch: Int

    package init(_ records: Records, batch: Int = 1_000) {
        self.records = records
        self.batch = batch
    }

    /// The values of `revisions` that the log reaches (a revision below the log's `minRevision`
    /// may have none): from memory, else computed where missing and read from the store. An
    /// answer asks for the revisions of its change sets alone, so a scoped answer whose change
    /// sets lie far apart reads their values, not the ones between.
    ///
    /// - Throws: `SyncStoreError` `revisionAhead` when one is past the newest revision.
    ///
    /// The values missing from memory are read once for a crowd that asks for the same ones (the
    /// requests a commit wakes, which ask for the same new revisions): `SharedReads`, as the log.
    package func chains(at revisions: [Int64]) async throws -> [Int64: HistoryChain] {
        let cache = records.chainCache
        var found = cache.values(at: revisions)
        let missing = revisions.filter { found[$0] == nil }
        guard !missing.isEmpty else { return found }
        let shared = try await cache.reads.value(for: missing) { [self] in try await read(missing) }
        found.merge(shared) { kept, _ in kept }
        return found
    }

    /// The values of `revisions`: those a read before this one kept, else computed and read.
    private func read(_ revisions: [Int64]) async throws -> [Int64: HistoryChain] {
        let cache = records.chainCache
        var found = cache.values(at: revisions)
        let missing = revisions.filter { found[$0] == nil }
        guard let last = missing.max() else { return found }
        cache.storeReads.update { $0 += 1 }
        try await extend(through: last)
        let stored = try await records.storedChains(at: missing)
        cache.insert(stored)
        for (revision, chain) in stored { found[revision] = chain }
        return found
    }

    /// Computes and stores the values up to `last`.
    package func extend(through last: Int64) async throws {
        while true {
            let stored = try await records.newestStoredChain(atOrBelow: last)
            if let stored, stored.0 >= last { return }
            let state = try await records.revisions()
            if last > state.revision { throw SyncStoreError.revisionAhead(requested: last, revision: state.revision) }
            if last < state.minRevision { return }
            guard let start = stored, start.0 >= state.minRevision else {
                try await records.storeChains([(state.minRevision, Self.randomBase())])
                continue
            }
            let feed: ChangeFeed
            do {
                feed = try await records.changeFeed(
                    after: start.0, limit: Int(min(Int64(batch), last - start.0)), byteBudget: 16 << 20,
                    version: nil)
            } catch let error as SyncStoreError where error.code == .historyExpired {
                continue  // compacted meanwhile: start again from the new minRevision
            }
            // The log has every revision after minRevision: a read that brings none would loop.
            guard !feed.changeSets.isEmpty else {
                throw SyncStoreError.storeUnavailable("the change log holds no change set after revision \(start.0)")
            }
            var chain = start.1
            let values = feed.changeSets.map { changeSet in
                chain = chain.extended(by: changeSet.json)
                return (changeSet.revision, chain)
            }
            try await records.storeChains(values)
        }
    }

    static func randomBase() -> HistoryChain {
        var generator = SystemRandomNumberGenerator()
        return HistoryChain(bytes: (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) })!
    }
}

extension HistoryChain {
    /// The value after this one for a change set whose JSON (as the store serves it) is `json`:
    /// `SHA-256(self ‖ json)`.
    package func extended(by json: [UInt8]) -> HistoryChain {
        var hash = SHA256()
        hash.update(data: bytes)
        hash.update(data: json)
        return HistoryChain(bytes: Array(hash.finalize()))!
    }
}

/// The newest history chain values a process has read, so that a crowd of requests at the same
/// revisions (live sync, a catch-up through a cache) costs the store no read: ``capacity`` values
/// at most (32 bytes each), the oldest revisions let go first.
package final class HistoryChainCache: @unchecked Sendable {
    private let lock = NSLock()
    private var values: [Int64: HistoryChain] = [:]
    private let capacity: Int
    /// The reads of values missing from memory, shared by the callers that ask together.
    let reads = SharedReads<[Int64], [Int64: HistoryChain]>()
    /// How many reads went to the store (for tests).
    package let storeReads = LockedValue(0)

    package init(capacity: Int = 200_000) {
        self.capacity = capacity
    }

    /// The values of `revisions` that are here.
    package func values(at revisions: [Int64]) -> [Int64: HistoryChain] {
        lock.withLock {
            var found: [Int64: HistoryChain] = [:]
            for revision in revisions { found[revision] = values[revision] }
            return found
        }
    }

    /// Lets go of the values below `revision` (compaction dropped them from the store).
    package func remove(below revision: Int64) {
        lock.withLock { values = values.filter { $0.key >= revision } }
    }

    /// Keeps `stored`; past the capacity, the oldest half of the revisions kept goes.
    package func insert(_ stored: [(Int64, HistoryChain)]) {
        lock.withLock {
            for (revision, chain) in stored { values[revision] = chain }
            guard values.count > capacity, let newest = values.keys.max() else { return }
            let floor = newest - Int64(capacity / 2)
            values = values.filter { $0.key > floor }
        }
    }
}
