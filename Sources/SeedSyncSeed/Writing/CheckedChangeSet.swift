package import SeedSyncModel

/// A `/v1/sync` change set that matched the schema (``ChangeApplier/check(_:keepingSource:)``):
/// its rows in schema order with normalized values, ready to be written.
package struct CheckedChangeSet: Sendable {
    /// The revision the change set produces, or `nil` when it carried none (which applying refuses).
    package let revision: Int64?
    /// The checked changes per type, in the change set's order; none for a change set with no types.
    package let changes: [ValidatedChanges]
    /// The change set as it came, when the check was asked to keep it.
    package let source: ChangeSet?

    /// Rows the change set creates, updates or deletes, over every type.
    package let rowCount: Int
    /// Whether it came in an answer read for some scope values (`SyncResponse.scopes`), whose
    /// revisions may leave gaps: it may then follow any older revision, and one without changes
    /// that is not newer than the stored revision is passed over (an answer that moved no further).
    package var mayFollowGap = false
    /// The server's history chain at ``revision``, when the answer carried it: stored with the
    /// revision when this is the last change set of a transaction.
    package var chain: HistoryChain?

    /// Whether it is an empty change set of a gapped answer (the mark
    /// `SyncResponse.changeSetsToApply` adds at `maxRevision`, or one whose types the database
    /// left out): it moves the revision and nothing else, and brings nothing when not newer.
    package var isGapMark: Bool { mayFollowGap && changes.isEmpty }

    init(revision: Int64?, changes: [ValidatedChanges], source: ChangeSet?) {
        self.revision = revision
        self.changes = changes
        self.source = source
        rowCount = changes.reduce(0) { $0 + $1.creates.count + $1.updates.count + $1.deletes.count }
    }

    /// What the change set does once applied: the keys it names, per type.
    var applied: AppliedChangeSet {
        var types: [String: AppliedChangeSet.Keys] = [:]
        for change in changes {
            types[change.type.name] = AppliedChangeSet.Keys(
                created: change.creates.map(\.key), updated: change.updates.map(\.key), deleted: change.deletes)
        }
        return AppliedChangeSet(revision: revision ?? 0, types: types)
    }
}
