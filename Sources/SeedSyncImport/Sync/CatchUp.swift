import Foundation
import SeedSyncBuild
import SeedSyncClient
import SeedSyncModel
import SeedSyncSQL
package import SeedSyncSeed

extension ImportSession {
    /// `/v1/sync` from the database's revision until `hasMore` is false and the outbox has nothing
    /// left to push. Each request pushes the next local change sets (``PendingChanges/nextPush(limit:in:)``);
    /// their results are applied in one transaction before the change sets of the answer. When
    /// nothing is pushed, answers come from a change feed that reads and checks them ahead
    /// (``CheckedAnswer``), about a transaction's worth, while the ones before are written, and
    /// they are held and applied in transactions of about
    /// ``SeedImporter/Configuration/maxRowsPerTransaction`` rows (``Unapplied``).
    /// What comes next after each answer or failure is ``CatchUpMachine``'s to decide.
    ///
    /// A token that may not push still catches up, the change sets kept.
    ///
    /// - Returns: whether the server let the token push (the run then ends with
    ///   ``ImportError/Code/pushForbidden``, see ``pushForbidden(_:)``).
    @discardableResult
    func catchUp(_ database: inout LocalDatabase, info: SchemaInfo) async throws -> Bool {
        let applier = ChangeApplier(schema: database.metadata.schema)
        let pending = PendingChanges(schema: database.metadata.schema, resolution: configuration.conflicts)
        let check = AnswerCheck(
            applier: applier,
            // Types the server has and the database left out (a seed built with --types) are dropped.
            excluded: Set(info.types.map(\.name)).subtracting(database.metadata.schema.types.map(\.name)),
            keepsSources: configuration.beforeMerge != nil)
        var machine = CatchUpMachine(revision: try await database.revision())
        configuration.batchGate?.startCatchUp()
        defer { configuration.batchGate?.endCatchUp() }
        /// The answers when nothing is pushed, read and checked ahead (`nil` after a push or a
        /// failure, which drops what it had read ahead: a push's answer starts from the database).
        var feed: PrefetchingSequence<CheckedAnswer, FeedCursor>.Iterator?
        /// The next push when the end of the last round read it already.
        var queued: [OutboxEntry]?
        /// Change sets of answers read and not applied yet: see ``Unapplied``.
        var unapplied = Unapplied(maxRows: configuration.maxRowsPerTransaction)
        func applyUnapplied() async throws {
            try await apply(
                unapplied.take(), with: applier, pending: pending, to: database, machine: &machine, info: info)
        }
        while true {
            try Task.checkCancellation()
            let push: [OutboxEntry]
            if let queued {
                push = queued
            } else {
                push = try await nextPush(of: pending, limit: machine.pushAllowance, in: database)
            }
            queued = nil
            // A push asks from the database's revision: nothing read is held here, since every
            // path that queues a push applies what it read first.
            if !push.isEmpty { feed = nil }
            let answer: CheckedAnswer
            do {
                answer = try await next(
                    from: machine.revision, pushing: push, version: database.metadata.schemaVersion, check: check,
                    feed: &feed)
            } catch let error as SyncClientError {
                feed = nil
                try await applyUnapplied()
                switch machine.requestFailed(CatchUpMachine.Failure(error), pushed: push.count) {
                case .recover(let minRevision):
                    database = try await recover(database, minRevision: minRevision ?? info.minRevision)
                    machine.reached(try await database.revision())
                case .retry:
                    break
                case .dropPushed:
                    let entry = push[0]
                    let dropped = try await gated {
                        try await database.write("drop change set \(entry.id)") { db in
                            try pending.dropTooLarge(entry, reason: "\(error)", in: db)
                        }
                    }
                    record(dropped)
                case .fail:
                    throw failure(error, at: machine.revision)
                }
                continue
            }
            let response = answer.response
            if !push.isEmpty {
                let (results, retried) = (response.results, machine.retried)
                let (events, kept) = try await gated {
                    try await database.write("apply the results of \(push.count) pushed change sets") { db in
                        try pending.handle(results, retried: retried, in: db)
                    }
                }
                record(events)
                machine.pushAnswered(kept: kept)
            }
            unapplied.append(answer.changeSets)
            if let failure = answer.failure {
                // What came before the change set that does not fit is applied, as it would be alone;
                // nothing after it is read meanwhile.
                feed = nil
                try await applyUnapplied()
                throw try await database.syncStopped(by: failure)
            }
            if response.hasMore, push.isEmpty, !unapplied.isFull {
                // More to read and nothing to push: the next answer joins this transaction.
                queued = try await nextPush(of: pending, limit: machine.pushAllowance, in: database)
                if queued?.isEmpty == true { continue }
                // The push's answer starts from the database: reading ahead meanwhile would be lost.
                feed = nil
            }
            try await applyUnapplied()
            if response.hasMore { continue }
            queued = try await nextPush(of: pending, limit: machine.pushAllowance, in: database)
            if machine.isFinished(nextPush: queued?.count ?? 0, answerHadChangeSets: !answer.changeSets.isEmpty) {
                break
            }
        }
        report.pending = try await database.read { db in try Outbox.count(in: db) }
        emit(.caughtUp(revision: machine.revision))
        return machine.mayPush
    }

    /// Applies `batches`, a transaction each (see ``Unapplied``), each after its merge notice, and
    /// moves `machine` along.
    private func apply(
        _ batches: [[CheckedChangeSet]], with applier: ChangeApplier, pending: PendingChanges,
        to database: LocalDatabase, machine: inout CatchUpMachine, info: SchemaInfo
    ) async throws {
        for batch in batches {
            try Task.checkCancellation()
            try await noticeBeforeMerge(batch, pending: pending, in: database)
            try await commit(batch, with: applier, pending: pending, to: database, machine: &machine, info: info)
        }
    }

    /// Commits `changeSets` in one transaction, or in several when an edit session begins meanwhile
    /// (it waits for the next change set, not for the batch).
    ///
    /// When one of them does not fit, the transaction fails as a whole: they are then committed
    /// again in halves, down to that one, so that every change set before it is kept (as it was
    /// with a transaction per answer) and the error names it alone.
    private func commit(
        _ changeSets: [CheckedChangeSet], with applier: ChangeApplier, pending: PendingChanges,
        to database: LocalDatabase,
        machine: inout CatchUpMachine, info: SchemaInfo
    ) async throws {
        var stopsEarly: (@Sendable () -> Bool)?
        if let gate = configuration.batchGate { stopsEarly = { gate.isWanted } }
        var rest = changeSets
        while !rest.isEmpty {
            let (applied, events): ([AppliedChangeSet], [ImportEvent])
            do {
                (applied, events) = try await gated { [rest, stopsEarly] in
                    try await database.apply(rest, with: applier, pending: pending, stopsEarly: stopsEarly)
                }
            } catch let error as ImportError where error.code == .invalidChangeSet && rest.count > 1 {
                let half = rest.count / 2
                for part in [rest[..<half], rest[half...]] {
                    try await commit(
                        Array(part), with: applier, pending: pending, to: database, machine: &machine, info: info)
                }
                return
            }
            rest.removeFirst(applied.count)
            record(applied)
            record(events)
            machine.reached(applied.last?.revision ?? machine.revision)
            emit(.progress(revision: machine.revision, serverRevision: max(info.revision, machine.revision)))
            try await database.checkpointIfLarge()
        }
    }

    /// Runs the transaction `body` through the engine's ``BatchGate`` (after the app's edit
    /// sessions), or at once for a ``SeedImporter`` of its own.
    private func gated<T>(_ body: () async throws -> T) async throws -> T {
        guard let gate = configuration.batchGate else { return try await body() }
        return try await gate.transaction(body)
    }

    /// The next local change sets to push, at most `limit` (none when it is 0).
    private func nextPush(of pending: PendingChanges, limit: Int, in database: LocalDatabase) async throws
        -> [OutboxEntry]
    {
        guard limit > 0 else { return [] }
        return try await database.read { db in try pending.nextPush(limit: limit, in: db) }
    }

    /// The error a failed request ends the catch-up with, the database at `revision`.
    private func failure(_ error: SyncClientError, at revision: Int64) -> any Error {
        guard error.code == .revisionAhead else { return error }
        return ImportError(
            .revisionAhead,
            "\(databasePath) is at revision \(revision), which the server has not reached (\(error)); was the server reset? Delete the database to install the seed again"
        )
    }

    /// The end of a run whose token may not push: caught up, with local change sets waiting.
    func pushForbidden(_ database: LocalDatabase) async throws -> ImportError {
        ImportError(
            .pushForbidden,
            "\(databasePath) is caught up at revision \(try await database.revision()), but \(report.pending) local change sets are waiting: the server does not let this token push them; use a token with write access"
        )
    }

    /// The next `/v1/sync` answer from `revision`, in the database's schema `version`, checked:
    /// pushing `entries` in a request of their own, or, with nothing to push, from `feed`, the
    /// answers read and checked ahead (started from `revision` when there is none; it ends after
    /// an answer without `hasMore`).
    private func next(
        from revision: Int64, pushing entries: [OutboxEntry], version: Int, check: AnswerCheck,
        feed: inout PrefetchingSequence<CheckedAnswer, FeedCursor>.Iterator?
    ) async throws -> CheckedAnswer {
        let limit = configuration.syncLimit
        if !entries.isEmpty {
            return check(
                try await client.sync(
                    from: revision, limit: limit, pushing: entries.map(\.pushed), schemaVersion: version))
        }
        // Read and checked ahead up to about a transaction's rows (the one being written holds as
        // many), so that the next transaction is read while this one is written.
        let (ahead, rows) = (Self.maxAnswersAhead, configuration.maxRowsPerTransaction)
        func newFeed(readsLog: Bool) -> PrefetchingSequence<CheckedAnswer, FeedCursor>.Iterator {
            client.changeFeed(from: revision, limit: limit, schemaVersion: version, readsLog: readsLog, ahead: ahead)
                .map(check.callAsFunction).weighing(\.heldSize, upTo: rows).makeAsyncIterator()
        }
        var answers = feed ?? newFeed(readsLog: true)
        defer { feed = answers }
        guard let answer = try await answers.next() else {
            // The last answer said there was no more; ask the origin again from where the database is.
            answers = newFeed(readsLog: false)
            return try await answers.next()!
        }
        return answer
    }

    /// The most answers a catch-up reads and checks ahead, whatever they hold (answers of types the
    /// database left out hold no rows).
    static let maxAnswersAhead = 32

    func record(_ events: [ImportEvent]) {
        for event in events {
            switch event {
            case .pushed: report.pushed += 1
            case .conflict: report.conflicts += 1
            case .rejected: report.rejected += 1
            default: break
            }
            emit(event)
        }
    }

    func record(_ applied: [AppliedChangeSet]) {
        for changeSet in applied {
            report.changeSets += 1
            report.inserted += changeSet.created
            report.updated += changeSet.updated
            report.deleted += changeSet.deleted
            emit(.applied(changeSet))
        }
    }

    /// After 410 `history_expired`: the seed again when the server's history reaches it, else a
    /// full snapshot downloaded beside the database; either replaces the database in one transaction.
    private func recover(_ database: LocalDatabase, minRevision: Int64) async throws -> LocalDatabase {
        if let summary = seed.summary, summary.revision < minRevision {
            return try await replaceWithSnapshot(database, minRevision: minRevision)
        }
        let metadata: SeedMetadata
        do {
            metadata = try seed.copy(to: installingPath, expectedSchemaVersion: configuration.expectedSchemaVersion)
        } catch let error as ImportError where Self.rejectsSeed(error) {
            reject(seed: error)
            return try await replaceWithSnapshot(database, minRevision: minRevision)
        }
        defer { SQLiteFiles.remove(at: installingPath) }
        guard metadata.revision >= minRevision, metadata.schema == database.metadata.schema else {
            return try await replaceWithSnapshot(database, minRevision: minRevision)
        }
        return try await gatedReplace(database, with: installingPath, revision: metadata.revision, source: .seed)
    }

    private func replaceWithSnapshot(_ database: LocalDatabase, minRevision: Int64) async throws -> LocalDatabase {
        emit(.downloadingSnapshot(minRevision: minRevision))
        let built = try await downloadSnapshot(
            types: database.metadata.schema.types.map(\.name), version: database.metadata.schemaVersion)
        defer {
            try? FileManager.default.removeItem(atPath: snapshotPath)
            try? FileManager.default.removeItem(atPath: built.manifestPath)
        }
        return try await gatedReplace(
            database, with: snapshotPath, revision: built.manifest.revision, source: .snapshot)
    }

    /// The swap of a 410 recovery, once its file is ready. It lands on every row, so it waits for
    /// the edit sessions, and a session that begins meanwhile waits for it; the download or copy
    /// before it does not hold a session back (it has the lowest priority of a run's steps). A stop
    /// or a pause while it waits ends the run, and the finished file is removed with it: the next
    /// run downloads (or copies) again.
    private func gatedReplace(
        _ database: LocalDatabase, with source: String, revision: Int64, source kind: Replacement.Source
    ) async throws -> LocalDatabase {
        try await gated {
            try await replace(database, with: source, revision: revision, reason: .historyExpired, source: kind)
        }
    }

    /// Builds a snapshot of the server at ``snapshotPath`` (as `seed-build --resume` does): `types`
    /// (all when `nil`) in schema version `version` (the newest when `nil`), going on from the
    /// download an interrupted run left, unless it cannot (another schema or type selection, or
    /// history the server no longer has): then from the start.
    func downloadSnapshot(types: [String]?, version: Int?) async throws -> BuildReport {
        func build(resuming: Bool) async throws -> BuildReport {
            try await SeedBuilder(
                client: client,
                options: .init(
                    output: snapshotPath, types: types, syncLimit: configuration.syncLimit, resume: resuming,
                    schemaVersion: version)
            ).build()
        }
        do {
            do {
                return try await build(resuming: true)
            } catch let error as SeedError where error.code == .notResumable {
                return try await build(resuming: false)
            }
        } catch let error as SeedError {
            // The builder has removed its work file; the database is untouched.
            throw ImportError(error, otherwise: .invalidChangeSet, "cannot download the snapshot for \(databasePath)")
        }
    }
}

/// The change sets of the answers a catch-up has read and not applied yet. While the server has
/// more and nothing waits to be pushed, answers are read on until they hold about `maxRows` rows
/// (``SeedImporter/Configuration/maxRowsPerTransaction``), and applied together: a transaction
/// per answer would write a page of a large database once per answer that changes a row of it
/// (see `docs/PERFORMANCE.md`, case 3). Before a push, after a failed request, and at the end of
/// the answers, they are applied whatever their number, in batches of about `maxRows` rows, a
/// transaction each.
///
/// The first transactions are smaller: a sixteenth of `maxRows`, then an eighth, a quarter, a half.
/// The writer then starts on the first answers while the next ones are read (ahead, see
/// ``CheckedAnswer``), instead of waiting for a whole transaction's worth to arrive.
package struct Unapplied {
    package let maxRows: Int
    private var batches: [[CheckedChangeSet]] = []
    private var lastBatchRows = 0
    /// Rows held, over every batch (``CheckedChangeSet/heldSize``).
    package private(set) var rows = 0
    /// How many times change sets were taken to be applied.
    private var taken = 0

    /// Whether enough rows are held to apply them rather than read on.
    package var isFull: Bool { rows >= Swift.max(1, maxRows >> Swift.max(0, 4 - taken)) }

    package init(maxRows: Int) {
        self.maxRows = maxRows
    }

    package mutating func append(_ more: [CheckedChangeSet]) {
        for changeSet in more {
            let count = changeSet.heldSize
            if batches.isEmpty || (lastBatchRows > 0 && lastBatchRows + count > maxRows) {
                batches.append([])
                lastBatchRows = 0
            }
            batches[batches.count - 1].append(changeSet)
            lastBatchRows += count
            rows += count
        }
    }

    /// Every batch held, in order; none is held after.
    package mutating func take() -> [[CheckedChangeSet]] {
        if !batches.isEmpty { taken += 1 }
        defer { (batches, lastBatchRows, rows) = ([], 0, 0) }
        return batches
    }
}

/// A sync answer whose change sets were checked against the database's schema where it was read
/// (for a change feed, in the task that fetched it, ahead of the writes): see ``AnswerCheck``.
struct CheckedAnswer: Sendable {
    /// The answer without its change sets (they are in ``changeSets``).
    var response: SyncResponse
    /// The change sets that fit, in order: all of them unless ``failure`` is set.
    var changeSets: [CheckedChangeSet]
    /// Why the change set after ``changeSets`` does not fit; the ones after it were not checked.
    var failure: SeedError?

    /// What the answer weighs held: ``CheckedChangeSet/heldSize`` summed.
    var heldSize: Int { changeSets.reduce(0) { $0 + $1.heldSize } }
}

extension CheckedChangeSet {
    /// What a held change set counts for against ``Unapplied/maxRows``: its rows, and at least one
    /// (a change set of types the database left out writes only its revision, but a long run of them
    /// must not be held without bound).
    var heldSize: Int { Swift.max(1, rowCount) }
}

/// Checks the change sets of an answer for a database: the types it left out dropped, the
/// `__oldId__` marks removed, then ``ChangeApplier/check(_:keepingSource:)``.
struct AnswerCheck: Sendable {
    let applier: ChangeApplier
    let excluded: Set<String>
    /// Whether to keep each change set as it came (for a ``MergeNotice``).
    let keepsSources: Bool

    func callAsFunction(_ response: SyncResponse) -> CheckedAnswer {
        var answer = CheckedAnswer(response: response, changeSets: [])
        answer.response.changeSets = []
        answer.changeSets.reserveCapacity(response.changeSets.count)
        for changeSet in response.changeSets {
            do {
                let plain = changeSet.removingChanges(ofTypes: excluded).removingOldIDs()
                answer.changeSets.append(try applier.check(plain, keepingSource: keepsSources))
            } catch {
                answer.failure = error
                break
            }
        }
        return answer
    }
}
