import Foundation
import GRDB
import SeedSyncModel
import SeedSyncSeed

/// One write transaction that a catch-up holds open across its answers, on the importer's own
/// connection: what makes a large catch-up run at SQLite's own speed (`docs/PERFORMANCE.md`,
/// case 3).
///
/// A transaction per batch of answers makes SQLite write a page of a large database again in
/// every transaction that changes a row of it, and the first transactions must be small so that
/// writing starts while the next answers arrive. Held open, the transaction takes each batch as it
/// comes (each written in key order, ``ChangeApplier``), the pages it dirties stay in the page
/// cache (``SeedImporter/Configuration/catchUpCacheMiB``: past it SQLite writes dirty pages to the
/// WAL early, which is slower, never wrong), and it commits once, when the catch-up ends (or after
/// ``SeedImporter/Configuration/maxRowsPerCommit`` rows or ``SeedImporter/Configuration/maxSecondsPerCommit``
/// seconds, so that another writer of the file never waits long): each page written once.
///
/// The guarantees are those of any transaction of the importer: whole change sets (it commits
/// between two), the revision stored with the rows (``ChangeApplier`` saves it with each batch),
/// and a process killed before the commit leaves the database as it was. The change sets applied
/// are reported (``ImportEvent/applied(_:)``) once committed, never before.
///
/// It holds the connection's writer for its length: the catch-up reads nothing of the database
/// meanwhile (it keeps the revision and chain it reached itself), and it is used only where nothing
/// else writes: not on an app's database, not in a ``SyncEngine`` (whose edit sessions must not
/// wait), not with a ``SeedImporter/Configuration/beforeMerge`` handler or local change sets to
/// push. A batch that fails, or a commit (deferred references are checked there), rolls the held
/// transaction back whole: the catch-up then goes on from the database's revision in transactions
/// of its own, which keep every change set before the failing one and name it.
///
/// The writer's thread waits for batches in the transaction's closure; the catch-up hands them over
/// with ``write(_:)`` (which waits while about ``maxRows`` rows are still unwritten, so memory stays
/// bounded) and ends it with ``commit()`` or ``rollBack()``.
final class HeldTransaction: @unchecked Sendable {
    private enum Item {
        case batch([CheckedChangeSet])
        case commit
        case rollBack
    }

    /// How the transaction ended: the change sets it made durable, in order (those of the commits
    /// on the way too, when a later batch failed),
    /// and the error that rolled back the rest, if one did.
    struct Outcome {
        var committed: [AppliedChangeSet] = []
        /// What the local edits' reconciliation with the committed change sets reported.
        var events: [ImportEvent] = []
        var failure: (any Error)?
    }

    private let condition = NSCondition()
    private var items: [Item] = []
    private var queuedRows = 0
    /// How it ended, for the caller that waits for it.
    private var outcome: Outcome?
    private var closed = false
    private let maxRows: Int
    private var work: Task<Void, Never>?

    /// Starts the transaction on `database`'s writer: its page cache set to `cacheMiB` for its
    /// length; batches applied with `applier`, the local edits brought in line by `pending`.
    init(
        database: LocalDatabase, applier: ChangeApplier, pending: PendingChanges, cacheMiB: Int, maxRows: Int,
        commitsAfter limit: (rows: Int, seconds: Double)
    ) {
        self.maxRows = max(1, maxRows)
        work = Task { [self] in
            do {
                try await database.writer.writeWithoutTransaction { db in
                    let pages = try Int.fetchOne(db, sql: "PRAGMA cache_size") ?? -2000
                    try db.execute(sql: "PRAGMA cache_size = -\(cacheMiB << 10)")
                    defer { try? db.execute(sql: "PRAGMA cache_size = \(pages)") }
                    try self.serve(db, applier: applier, pending: pending, commitsAfter: limit)
                }
            } catch {
                self.finish(failure: error)
            }
        }
    }

    /// Hands `changeSets` (whole, in order) to the transaction; waits while the ones handed over
    /// before still hold about ``maxRows`` unwritten rows.
    ///
    /// - Returns: `false` when the transaction ended already (a batch failed: ``commit()`` or
    ///   ``rollBack()`` says why), or the task was cancelled while it waited.
    func write(_ changeSets: [CheckedChangeSet]) async -> Bool {
        let rows = changeSets.reduce(0) { $0 + $1.heldSize }
        while true {
            let (taken, ended) = condition.withLock { () -> (Bool, Bool) in
                if outcome != nil || closed { return (false, true) }
                guard queuedRows == 0 || queuedRows + rows <= maxRows else { return (false, false) }
                items.append(.batch(changeSets))
                queuedRows += rows
                condition.broadcast()
                return (true, false)
            }
            if taken { return true }
            if ended || Task.isCancelled { return false }
            try? await Task.sleep(for: .milliseconds(2))
        }
    }

    /// Commits what was handed over and ends the transaction; the outcome says what was made
    /// durable, and why the rest was rolled back when a batch or the commit failed.
    func commit() async -> Outcome {
        await end(with: .commit)
    }

    /// Rolls back what was handed over since the last commit and ends the transaction.
    func rollBack() async -> Outcome {
        await end(with: .rollBack)
    }

    private func end(with item: Item) async -> Outcome {
        condition.withLock {
            if !closed, outcome == nil { items.append(item) }
            closed = true
            condition.broadcast()
        }
        await work?.value
        return condition.withLock { outcome ?? Outcome(failure: CancellationError()) }
    }

    /// The writer's side: transactions of batches, committed at the end, or after `limit`'s rows
    /// or seconds.
    private func serve(
        _ db: Database, applier: ChangeApplier, pending: PendingChanges,
        commitsAfter limit: (rows: Int, seconds: Double)
    ) throws {
        let period = Duration.milliseconds(Int64(limit.seconds * 1000))
        var began = ContinuousClock.now
        var applied: [AppliedChangeSet] = []
        var events: [ImportEvent] = []
        var committed = (changeSets: 0, events: 0)
        var rowsInTransaction = 0
        do {
            try db.beginTransaction(.immediate)
            while true {
                switch next() {
                case .batch(let changeSets):
                    let rows = changeSets.reduce(0) { $0 + $1.heldSize }
                    let batch = try applier.apply(changeSets, in: db)
                    events += try pending.absorb(batch, in: db)
                    applied += batch
                    rowsInTransaction += rows
                    condition.withLock { queuedRows -= rows }
                    if rowsInTransaction >= limit.rows || ContinuousClock.now - began >= period {
                        try db.commit()
                        committed = (applied.count, events.count)
                        try db.beginTransaction(.immediate)
                        (rowsInTransaction, began) = (0, .now)
                    }
                case .commit:
                    try db.commit()
                    finish(Outcome(committed: applied, events: events))
                    return
                case .rollBack:
                    try db.rollback()
                    finish(
                        Outcome(
                            committed: Array(applied.prefix(committed.changeSets)),
                            events: Array(events.prefix(committed.events))))
                    return
                }
            }
        } catch {
            if db.isInsideTransaction { try? db.rollback() }
            finish(
                Outcome(
                    committed: Array(applied.prefix(committed.changeSets)),
                    events: Array(events.prefix(committed.events)), failure: error))
        }
    }

    /// The next item, waited for.
    private func next() -> Item {
        condition.withLock {
            while items.isEmpty { condition.wait() }
            return items.removeFirst()
        }
    }

    private func finish(_ result: Outcome) {
        condition.withLock {
            if outcome == nil { outcome = result }
            closed = true
            condition.broadcast()
        }
    }

    private func finish(failure: any Error) {
        finish(Outcome(failure: failure))
    }
}
