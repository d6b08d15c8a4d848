import Foundation
import SeedSyncBuild
import SeedSyncClient
import SeedSyncModel
import SeedSyncSQL
package import SeedSyncSeed

extension ImportSession {
    /// `/v1/sync` from the database's revision until `hasMore` is false and the outbox has nothing
    /// left to push: a ``CatchUp`` run, its steps decided by ``CatchUpMachine``. `database` is the
    /// one the catch-up ends with (a 410 recovery replaces it), also when it fails.
    ///
    /// A token that may not push still catches up, the change sets kept.
    ///
    /// - Returns: whether the server let the token push (the run then ends with
    ///   ``ImportError/Code/pushForbidden``, see ``pushForbidden(_:)``).
    @discardableResult
    func catchUp(_ database: inout LocalDatabase, info: SchemaInfo) async throws -> Bool {
        let run = CatchUp(session: self, database: database, info: info, revision: try await database.revision())
        editing?.startCatchUp()
        defer {
            editing?.endCatchUp()
            database = run.database
        }
        try await run.run()
        report.pending = try await run.database.read { db in try Outbox.count(in: db) }
        emit(.caughtUp(revision: run.machine.revision))
        return run.machine.mayPush
    }

    /// Runs the transaction `body` through the engine's gate (after the app's edit sessions, see
    /// ``EditSessions``), or at once for a ``SeedImporter`` of its own.
    func gated<T>(_ body: () async throws -> T) async throws -> T {
        guard let editing else { return try await body() }
        return try await editing.transaction(body)
    }

    /// The error a failed request ends the catch-up with, the database at `revision`.
    func failure(_ error: SyncClientError, at revision: Int64) -> any Error {
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
    /// an answer without `hasMore`). `scopes`: the values of a reader of some, named in the log
    /// reads' addresses.
    func next(
        from revision: Int64, chain: HistoryChain?, pushing entries: [OutboxEntry], version: Int, scopes: ScopeList?,
        check: AnswerCheck, feed: inout PrefetchingSequence<CheckedAnswer, FeedCursor>.Iterator?
    ) async throws -> CheckedAnswer {
        let limit = configuration.syncLimit
        if !entries.isEmpty {
            return check(
                try await client.sync(
                    from: revision, chain: chain, limit: limit, pushing: entries.map(\.pushed), schemaVersion: version
                ))
        }
        // Read and checked ahead up to about a transaction's rows (the one being written holds as
        // many), so that the next transaction is read while this one is written.
        let (ahead, rows) = (Self.maxAnswersAhead, configuration.maxRowsPerTransaction)
        func newFeed(readsLog: Bool) -> PrefetchingSequence<CheckedAnswer, FeedCursor>.Iterator {
            client.changeFeed(
                from: revision, chain: chain, limit: limit, schemaVersion: version, readsLog: readsLog, ahead: ahead,
                scopes: scopes
            )
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
    func recover(_ database: LocalDatabase, minRevision: Int64) async throws -> LocalDatabase {
        // An app of a published seed ships none: the snapshot is the way back.
        if !configuration.shipsSeed { return try await replaceWithSnapshot(database, minRevision: minRevision) }
        if let summary = seed.summary, summary.revision < minRevision {
            return try await replaceWithSnapshot(database, minRevision: minRevision)
        }
        let metadata: SeedMetadata
        do {
            metadata = try seed.copy(
                to: files.installing.path, expectedSchemaVersion: configuration.expectedSchemaVersion)
        } catch let error as ImportError where Self.rejectsSeed(error) {
            reject(seed: error)
            return try await replaceWithSnapshot(database, minRevision: minRevision)
        }
        defer { files.installing.remove() }
        guard metadata.revision >= minRevision, metadata.schema == database.metadata.schema else {
            return try await replaceWithSnapshot(database, minRevision: minRevision)
        }
        return try await gatedReplace(
            database, with: files.installing.path, revision: metadata.revision, reason: .historyExpired, source: .seed)
    }

    /// Replaces the database with a full snapshot of what the token reads, downloaded beside it;
    /// `resuming`: going on from a download an interrupted run left (never after a rewritten
    /// history, whose pages may be of the history the database had).
    func replaceWithSnapshot(
        _ database: LocalDatabase, minRevision: Int64, reason: Replacement.Reason = .historyExpired,
        resuming: Bool = true
    ) async throws -> LocalDatabase {
        emit(.downloadingSnapshot(minRevision: minRevision))
        let built = try await downloadSnapshot(
            types: database.metadata.schema.types.map(\.name), version: database.metadata.schemaVersion,
            resuming: resuming)
        defer {
            try? FileManager.default.removeItem(atPath: snapshot.output)
            try? FileManager.default.removeItem(atPath: built.manifestPath)
        }
        return try await gatedReplace(
            database, with: snapshot.output, revision: built.manifest.revision, reason: reason, source: .snapshot)
    }

    /// The swap of a replacement (a 410 recovery, a grant of more scope values), once its file is ready. It lands on every row, so it waits for
    /// the edit sessions, and a session that begins meanwhile waits for it; the download or copy
    /// before it does not hold a session back (it has the lowest priority of a run's steps). A stop
    /// or a pause while it waits ends the run, and the finished file is removed with it: the next
    /// run downloads (or copies) again.
    private func gatedReplace(
        _ database: LocalDatabase, with source: String, revision: Int64, reason: Replacement.Reason,
        source kind: Replacement.Source
    ) async throws -> LocalDatabase {
        try await gated {
            try await replace(database, with: source, revision: revision, reason: reason, source: kind)
        }
    }

    /// Builds a snapshot of the server at `snapshot.output` (as `seed-build --resume` does): `types`
    /// (all when `nil`) in schema version `version` (the newest when `nil`), going on from the
    /// download an interrupted run left, unless it cannot (another schema or type selection, or
    /// history the server no longer has): then from the start.
    func downloadSnapshot(types: [String]?, version: Int?, resuming: Bool = true) async throws -> BuildReport {
        func build(resuming: Bool) async throws -> BuildReport {
            try await SeedBuilder(
                client: client,
                options: .init(
                    output: snapshot.output, types: types, syncLimit: configuration.syncLimit, resume: resuming,
                    schemaVersion: version)
            ).build()
        }
        do {
            do {
                return try await build(resuming: resuming)
            } catch let error as SeedError where error.code == .notResumable && resuming {
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
        for (changeSet, chain) in zip(response.changeSetsToApply, response.chainsToApply) {
            do {
                let plain = changeSet.removingChanges(ofTypes: excluded).removingOldIDs()
                var checked = try applier.check(plain, keepingSource: keepsSources)
                checked.mayFollowGap = response.scopes != nil
                checked.chain = chain
                answer.changeSets.append(checked)
            } catch {
                answer.failure = error
                break
            }
        }
        return answer
    }
}
