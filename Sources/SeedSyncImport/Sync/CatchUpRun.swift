import SeedSyncClient
import SeedSyncModel
import SeedSyncSeed

/// One catch-up of an ``ImportSession``: the loop that runs ``CatchUpMachine``'s steps, and what
/// the steps work with.
///
/// Each request pushes the next local change sets (``PendingChanges/nextPush(limit:in:)``); their
/// results are applied in one transaction before the change sets of the answer. When nothing is
/// pushed, answers come from a change feed that reads and checks them ahead (``CheckedAnswer``),
/// about a transaction's worth, while the ones before are written, and they are held and applied
/// in transactions of about ``SeedImporter/Configuration/maxRowsPerTransaction`` rows (``Unapplied``).
final class CatchUp {
    let session: ImportSession
    /// The database, replaced by a 410 recovery.
    private(set) var database: LocalDatabase
    private(set) var machine: CatchUpMachine<OutboxEntry>
    private let info: SchemaInfo
    private let applier: ChangeApplier
    private let pending: PendingChanges
    private let check: AnswerCheck
    /// The answers when nothing is pushed, read and checked ahead (`nil` after a push or a
    /// failure, which drops what it had read ahead: a push's answer starts from the database).
    private var feed: PrefetchingSequence<CheckedAnswer, FeedCursor>.Iterator?
    /// Change sets of answers read and not applied yet.
    private var unapplied: Unapplied
    /// The transaction held open across the answers, where one may be (``HeldTransaction``):
    /// `nil` before the first apply and after it ended.
    private var held: HeldTransaction?
    /// Whether the catch-up may hold a transaction open: on the importer's own connection, with
    /// no edit session, merge handler or local change set to push; off for good once one failed.
    private var mayHold: Bool
    /// The history chain at ``CatchUpMachine/revision`` while a transaction is held (the database,
    /// busy with it, is not asked).
    private var heldChain: HistoryChain?

    init(session: ImportSession, database: LocalDatabase, info: SchemaInfo, revision: Int64) {
        let schema = database.metadata.schema
        self.session = session
        self.database = database
        self.info = info
        machine = CatchUpMachine(revision: revision)
        applier = ChangeApplier(schema: schema)
        pending = PendingChanges(schema: schema, resolution: session.configuration.conflicts)
        check = AnswerCheck(
            applier: applier,
            // Types the server has and the database left out (a seed built with --types) are dropped.
            excluded: Set(info.types.map(\.name)).subtracting(schema.types.map(\.name)),
            keepsSources: session.configuration.beforeMerge != nil)
        unapplied = Unapplied(maxRows: session.configuration.maxRowsPerTransaction)
        mayHold =
            !database.isAppDatabase && session.editing == nil && session.configuration.beforeMerge == nil
            && session.configuration.catchUpCacheMiB > 0 && session.configuration.maxRowsPerCommit > 0
            && session.configuration.maxSecondsPerCommit > 0
    }

    /// Runs the steps until the machine says the catch-up is finished. A transaction held open
    /// is committed before any step that is not a read or an apply, and at the end; when it fails,
    /// the catch-up goes on from the database's revision without one.
    func run() async throws {
        do {
            try await runSteps()
        } catch {
            if held != nil { _ = try? await endHeld(committing: !Task.isCancelled) }
            throw error
        }
    }

    private func runSteps() async throws {
        var step = machine.start()
        while true {
            if held != nil, !step.keepsHeldTransaction {
                guard try await endHeld(committing: true) else {
                    step = machine.recovered(at: try await database.revision())
                    continue
                }
            }
            switch step {
            case .readOutbox(let limit):
                // Nothing else writes while a transaction is held, and the outbox was empty.
                let entries =
                    held != nil
                    ? [] : try await database.read { [pending] db in try pending.nextPush(limit: limit, in: db) }
                if !entries.isEmpty { mayHold = false }
                step = machine.outboxRead(entries)
            case .request(let entries):
                try Task.checkCancellation()
                step = try await request(pushing: entries)
            case .apply(let stopReading):
                if stopReading { feed = nil }
                if mayHold {
                    guard try await hold(unapplied.take()) else {
                        step = machine.recovered(at: try await database.revision())
                        continue
                    }
                } else {
                    try await apply(unapplied.take())
                }
                step = machine.applied()
            case .recover(let minRevision):
                database = try await session.recover(database, minRevision: minRevision ?? info.minRevision)
                step = machine.recovered(at: try await database.revision())
            case .rebuild:
                database = try await session.replaceWithSnapshot(
                    database, minRevision: info.minRevision, reason: .historyRewritten, resuming: false)
                step = machine.recovered(at: try await database.revision())
            case .drop(let entry, let error):
                try await drop(entry, because: error)
                step = machine.dropped()
            case .fail(let error):
                throw session.failure(error, at: machine.revision)
            case .stop(let failure):
                throw try await database.syncStopped(by: failure)
            case .finish:
                return
            }
        }
    }

    /// The request of a step: its answer's push results applied and its change sets held.
    private func request(pushing entries: [OutboxEntry]) async throws -> CatchUpMachine<OutboxEntry>.Step {
        // A push asks from the database's revision: what was read ahead would not follow on.
        if !entries.isEmpty { feed = nil }
        let answer: CheckedAnswer
        do {
            let chain = held != nil ? heldChain : try await database.historyChain(at: machine.revision)
            answer = try await session.next(
                from: machine.revision, chain: chain, pushing: entries,
                version: database.metadata.schemaVersion,
                scopes: info.scopes.map(ScopeList.init), check: check, feed: &feed)
        } catch let error as SyncClientError {
            feed = nil
            return machine.requestFailed(error)
        }
        let kept = entries.isEmpty ? [:] : try await handleResults(of: answer.response, pushing: entries.count)
        unapplied.append(answer.changeSets)
        // A gapped answer's mark at a revision the database has (nothing new) brings nothing.
        let broughtSome = answer.changeSets.contains { changeSet in
            !changeSet.isGapMark || changeSet.revision ?? .max > machine.revision
        }
        return machine.answered(
            kept: kept, hasMore: answer.response.hasMore, hadChangeSets: broughtSome,
            holdsEnough: mayHold || unapplied.isFull, failure: answer.failure)
    }

    /// Applies the results of a push of `count` change sets in one transaction: the conflicting
    /// change sets kept, with the server's revision of their rows.
    private func handleResults(of response: SyncResponse, pushing count: Int) async throws -> [String: Int64] {
        let (results, retried) = (response.results, machine.retried)
        let (events, kept) = try await session.gated { [database, pending] in
            try await database.write("apply the results of \(count) pushed change sets") { db in
                try pending.handle(results, retried: retried, in: db)
            }
        }
        session.record(events)
        return kept
    }

    /// Drops `entry`, which the server refuses for its size alone.
    private func drop(_ entry: OutboxEntry, because error: SyncClientError) async throws {
        let dropped = try await session.gated { [database, pending] in
            try await database.write("drop change set \(entry.id)") { db in
                try pending.dropTooLarge(entry, reason: "\(error)", in: db)
            }
        }
        session.record(dropped)
    }

    /// Hands `batches` to the held transaction (started at the first), the revision and chain
    /// they reach kept here.
    ///
    /// - Returns: `false` when the held transaction failed: it was rolled back (what it committed
    ///   before is recorded), and the catch-up goes on without one from the database's revision.
    private func hold(_ batches: [[CheckedChangeSet]]) async throws -> Bool {
        for batch in batches where !batch.isEmpty {
            try Task.checkCancellation()
            if held == nil {
                heldChain = try await database.historyChain(at: machine.revision)
                held = HeldTransaction(
                    database: database, applier: applier, pending: pending,
                    cacheMiB: session.configuration.catchUpCacheMiB,
                    maxRows: session.configuration.maxRowsPerTransaction,
                    commitsAfter: (session.configuration.maxRowsPerCommit, session.configuration.maxSecondsPerCommit))
            }
            guard await held!.write(batch) else { return try await endHeld(committing: false) }
            // A gap mark the database has reached changes nothing.
            if let last = batch.last(where: { !$0.isGapMark || ($0.revision ?? 0) > machine.revision }),
                let revision = last.revision
            {
                machine.reached(revision)
                heldChain = last.chain
            }
        }
        return true
    }

    /// Ends the held transaction, committing it or rolling it back, and records what it made
    /// durable.
    ///
    /// - Returns: `false` when it failed: a batch or the commit (a reference left dangling is
    ///   found there), so the rest was rolled back; the catch-up then holds no transaction again.
    @discardableResult
    private func endHeld(committing: Bool) async throws -> Bool {
        guard let transaction = held else { return true }
        held = nil
        let outcome = committing ? await transaction.commit() : await transaction.rollBack()
        session.record(outcome.committed)
        session.record(outcome.events)
        if let revision = outcome.committed.last?.revision {
            session.emit(.progress(revision: revision, serverRevision: max(info.revision, revision)))
        }
        guard outcome.failure == nil else {
            mayHold = false
            feed = nil
            return false
        }
        try await database.checkpointIfLarge()
        return true
    }

    /// Applies `batches`, a transaction each (see ``Unapplied``), each after its merge notice.
    private func apply(_ batches: [[CheckedChangeSet]]) async throws {
        for batch in batches {
            try Task.checkCancellation()
            try await session.noticeBeforeMerge(batch, pending: pending, in: database)
            try await commit(batch)
        }
    }

    /// Commits `changeSets` in one transaction, or in several when an edit session begins meanwhile
    /// (it waits for the next change set, not for the batch).
    ///
    /// When one of them does not fit, the transaction fails as a whole: they are then committed
    /// again in halves, down to that one, so that every change set before it is kept (as it was
    /// with a transaction per answer) and the error names it alone.
    private func commit(_ changeSets: [CheckedChangeSet]) async throws {
        var stopsEarly: (@Sendable () -> Bool)?
        if let editing = session.editing { stopsEarly = { editing.isWanted } }
        // The applier passes over a gap mark the database has reached, and counts it as nothing.
        var rest = Array(changeSets.drop { $0.isGapMark && $0.revision ?? .max <= machine.revision })
        while !rest.isEmpty {
            let (applied, events): ([AppliedChangeSet], [ImportEvent])
            do {
                (applied, events) = try await session.gated { [database, applier, pending, rest, stopsEarly] in
                    try await database.apply(rest, with: applier, pending: pending, stopsEarly: stopsEarly)
                }
            } catch let error as ImportError where error.code == .invalidChangeSet && rest.count > 1 {
                let half = rest.count / 2
                for part in [rest[..<half], rest[half...]] { try await commit(Array(part)) }
                return
            }
            rest.removeFirst(applied.count)
            session.record(applied)
            session.record(events)
            machine.reached(applied.last?.revision ?? machine.revision)
            session.emit(.progress(revision: machine.revision, serverRevision: max(info.revision, machine.revision)))
            try await database.checkpointIfLarge()
        }
    }
}

extension CatchUpMachine.Step {
    /// Whether a transaction held open goes on through this step: reads and applies do; any
    /// other step commits it first (what it applied is kept, as a transaction per batch keeps it).
    fileprivate var keepsHeldTransaction: Bool {
        switch self {
        case .readOutbox, .request, .apply: true
        case .recover, .rebuild, .drop, .fail, .stop, .finish: false
        }
    }
}
