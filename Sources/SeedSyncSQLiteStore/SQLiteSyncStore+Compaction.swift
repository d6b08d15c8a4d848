import GRDB
import SeedSyncModel
public import SeedSyncStore

extension SQLiteSyncStore {
    /// Drops change sets older than the newest `keep` revisions and raises `minRevision` to match,
    /// never past a registered seed that is not retired.
    ///
    /// A client at revision `revision - keep` or newer can still sync; older clients get
    /// `history_expired` and download a new snapshot.
    public func compact(keepingRevisions keep: Int64) async throws -> Compaction {
        precondition(keep >= 0, "keep must not be negative")
        // The chain reaches every revision first, so the value at the new minRevision is the
        // log's, not a new start (clients there keep theirs).
        try await HistoryLedger(self).extend(through: try await revisions().revision)
        let compaction = try await compactLog(keepingRevisions: keep)
        chainCache.remove(below: compaction.minRevision)
        return compaction
    }

    private func compactLog(keepingRevisions keep: Int64) async throws -> Compaction {
        try await writeTransaction { db in
            let state = try LogState.fetch(db)
            let pinned = try SeedRecords.oldestPinned(in: db)
            let wanted = state.revision - keep
            let minRevision = max(state.minRevision, min(wanted, pinned?.revision ?? wanted))
            try db.execute(sql: "DELETE FROM _seedsync_changes WHERE revision <= ?", arguments: [minRevision])
            let removed = db.changesCount
            try ScopeIndex.remove(through: minRevision, in: db)
            try SQLiteSyncStore.pruneChain(below: minRevision, in: db)
            try LogState.save(db, revision: state.revision, minRevision: minRevision)
            return Compaction(
                removedChangeSets: removed, minRevision: minRevision,
                pinnedBy: pinned.flatMap { $0.revision < wanted ? $0 : nil })
        }
    }
}
