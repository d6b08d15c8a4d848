import Foundation
import SeedSyncBuild
import SeedSyncClient
import SeedSyncModel
import SeedSyncSQL
import SeedSyncSeed

extension ImportSession {
    /// `/v1/sync` from the database's revision until `hasMore` is false and the outbox has nothing
    /// left to push. Each request pushes the next local change sets (``PendingChanges/nextPush(in:)``);
    /// their results are applied in one transaction before the change sets of the answer. When
    /// nothing is pushed, the next answer is requested and parsed while the current one is applied.
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
        // Types the server has and the database left out (a seed built with --types) are dropped.
        let excluded = Set(info.types.map(\.name)).subtracting(database.metadata.schema.types.map(\.name))
        var machine = CatchUpMachine(revision: try await database.revision())
        configuration.batchGate?.startCatchUp()
        defer { configuration.batchGate?.endCatchUp() }
        /// The answers when nothing is pushed, one ahead (`nil` after a push or a failure).
        var feed: PrefetchingSequence<SyncResponse, FeedCursor>.Iterator?
        /// The next push when the end of the last round read it already.
        var queued: [OutboxEntry]?
        /// Change sets of answers read and not applied yet: see ``Unapplied``.
        var unapplied = Unapplied()
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
            if !push.isEmpty {
                // A push asks from the database's revision: what was read is applied first.
                try await applyUnapplied()
                feed = nil
            }
            let response: SyncResponse
            do {
                response = try await next(
                    from: machine.revision, pushing: push, version: database.metadata.schemaVersion, feed: &feed)
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
            let changeSets = response.changeSets.map { $0.removingChanges(ofTypes: excluded).removingOldIDs() }
            unapplied.append(changeSets)
            if response.hasMore, push.isEmpty, unapplied.rows < configuration.maxRowsPerTransaction {
                // More to read and nothing to push: the next answer joins this transaction.
                queued = try await nextPush(of: pending, limit: machine.pushAllowance, in: database)
                if queued?.isEmpty == true { continue }
            }
            try await applyUnapplied()
            if response.hasMore { continue }
            queued = try await nextPush(of: pending, limit: machine.pushAllowance, in: database)
            if machine.isFinished(nextPush: queued?.count ?? 0, answerHadChangeSets: !changeSets.isEmpty) { break }
        }
        report.pending = try await database.read { db in try Outbox.count(in: db) }
        emit(.caughtUp(revision: machine.revision))
        return machine.mayPush
    }

    /// Applies `changeSets` in transactions of about ``SeedImporter/Configuration/maxRowsPerTransaction``
    /// rows, each after its merge notice, and moves `machine` along.
    private func apply(
        _ changeSets: [ChangeSet], with applier: ChangeApplier, pending: PendingChanges, to database: LocalDatabase,
        machine: inout CatchUpMachine, info: SchemaInfo
    ) async throws {
        for batch in batches(of: changeSets) {
            try Task.checkCancellation()
            try await noticeBeforeMerge(Array(batch), pending: pending, in: database)
            try await commit(
                Array(batch), with: applier, pending: pending, to: database, machine: &machine, info: info)
        }
    }

    /// Commits `changeSets` in one transaction, or in several when an edit session begins meanwhile
    /// (it waits for the next change set, not for the batch).
    ///
    /// When one of them does not fit, the transaction fails as a whole: they are then committed
    /// again in halves, down to that one, so that every change set before it is kept (as it was
    /// with a transaction per answer) and the error names it alone.
    private func commit(
        _ changeSets: [ChangeSet], with applier: ChangeApplier, pending: PendingChanges, to database: LocalDatabase,
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

    /// The next `/v1/sync` answer from `revision`, in the database's schema `version`: pushing
    /// `entries` in a request of their own, or, with nothing to push, from `feed`, the answers one
    /// ahead (started from `revision` when there is none; it ends after an answer without `hasMore`).
    private func next(
        from revision: Int64, pushing entries: [OutboxEntry], version: Int,
        feed: inout PrefetchingSequence<SyncResponse, FeedCursor>.Iterator?
    ) async throws -> SyncResponse {
        let limit = configuration.syncLimit
        if !entries.isEmpty {
            return try await client.sync(
                from: revision, limit: limit, pushing: entries.map(\.pushed), schemaVersion: version)
        }
        var answers =
            feed ?? client.changeFeed(from: revision, limit: limit, schemaVersion: version).makeAsyncIterator()
        defer { feed = answers }
        guard let response = try await answers.next() else {
            // The last answer said there was no more; ask the origin again from where the database is.
            answers = client.changeFeed(from: revision, limit: limit, schemaVersion: version, readsLog: false)
                .makeAsyncIterator()
            return try await answers.next()!
        }
        return response
    }

    /// Change sets grouped into transactions of about ``SeedImporter/Configuration/maxRowsPerTransaction`` rows.
    private func batches(of changeSets: [ChangeSet]) -> [ArraySlice<ChangeSet>] {
        var batches: [ArraySlice<ChangeSet>] = []
        var start = changeSets.startIndex
        var rows = 0
        for (index, changeSet) in zip(changeSets.indices, changeSets) {
            if rows > 0, rows + changeSet.rowCount > configuration.maxRowsPerTransaction {
                batches.append(changeSets[start..<index])
                start = index
                rows = 0
            }
            rows += changeSet.rowCount
        }
        if start < changeSets.endIndex { batches.append(changeSets[start...]) }
        return batches
    }

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
/// more and nothing waits to be pushed, answers are read on until they hold about
/// ``SeedImporter/Configuration/maxRowsPerTransaction`` rows, and applied together: a transaction
/// per answer would write a page of a large database once per answer that changes a row of it
/// (see `docs/PERFORMANCE.md`, case 3). Before a push, after a failed request, and at the end of
/// the answers, they are applied whatever their number.
struct Unapplied {
    private var changeSets: [ChangeSet] = []
    private(set) var rows = 0

    mutating func append(_ more: [ChangeSet]) {
        changeSets += more
        rows += more.reduce(0) { $0 + $1.rowCount }
    }

    /// Every change set held, in order; none is held after.
    mutating func take() -> [ChangeSet] {
        defer { (changeSets, rows) = ([], 0) }
        return changeSets
    }
}

extension ChangeSet {
    /// Rows the change set touches, over every type.
    var rowCount: Int {
        changes.reduce(0) { $0 + $1.create.count + $1.update.count + $1.delete.count }
    }
}
