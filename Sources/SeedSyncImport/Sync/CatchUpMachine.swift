package import SeedSyncClient
package import SeedSyncSeed

/// One catch-up (``ImportSession/catchUp(_:info:)``) as a state machine: it returns the next
/// ``Step`` (read the outbox, request, apply, recover, drop, fail, stop, finish), and the catch-up
/// is a loop over a `switch` that runs the step and tells the machine how it went. It decides, with
/// no server and no database, and is tested transition by transition (`CatchUpMachineTests`).
/// `Entry` is what a push carries (a local change set; any value in the tests).
///
/// ```
/// step        reported by            next
/// start       -                      readOutbox (request([]) when no push is allowed)
/// readOutbox  outboxRead(entries)    before a request: request(entries)
///                                    between reads: request([]) when none, else apply, then request(entries)
///                                    at the end: finish when nothing waits to be pushed, else request(entries)
/// request     answered(...)          a change set that does not fit: apply, then stop
///                                    hasMore, nothing pushed, room left: readOutbox (between reads)
///                                    else apply, then readOutbox (before a request, or at the end)
///             requestFailed(error)   apply, then recover, drop, readOutbox (a retry) or fail
/// recover     recovered(at:)         readOutbox
/// rebuild     recovered(at:)         readOutbox
/// drop        dropped()              readOutbox
/// ```
///
/// Its state: the database's `revision`; whether the token may push and how many change sets a
/// push may carry (halved on 413); the 410 recoveries made; the conflicting pushes kept for the
/// catch-up to resolve (see ``ConflictResolution``), held back until the database reaches the
/// server's revision of their rows; and where the steps are: the entries of the request under way,
/// a push read while answers were still being read, and what follows the next ``Step/apply(stopReading:)``.
package struct CatchUpMachine<Entry: Sendable>: Sendable {
    /// What the catch-up does next; each says which method reports how it went.
    package enum Step: Sendable {
        /// Read at most `limit` local change sets to push (``outboxRead(_:)``).
        case readOutbox(limit: Int)
        /// Ask the server from ``revision``, pushing `entries`, or with none reading the change feed
        /// (``answered(kept:hasMore:hadChangeSets:holdsEnough:failure:)`` or ``requestFailed(_:)``).
        case request(pushing: [Entry])
        /// Apply the change sets held, in transactions; `stopReading`: first drop the answers read
        /// ahead, which the next request would not use (``applied()``).
        case apply(stopReading: Bool)
        /// Replace the database from the seed or a snapshot at `minRevision` or later (``recovered(at:)``).
        case recover(minRevision: Int64?)
        /// Replace the database with a new snapshot: the server's history is not the one it applied
        /// (``recovered(at:)``).
        case rebuild
        /// Drop `entry`, a change set the server refuses for its size alone, saying `error` (``dropped()``).
        case drop(Entry, because: SyncClientError)
        /// End the catch-up with the request's error.
        case fail(SyncClientError)
        /// End the catch-up: the change set after the ones applied does not fit the database.
        case stop(SeedError)
        /// Caught up, with nothing left to push.
        case finish
    }

    /// The most whole-database recoveries (410, or 409 `history_rewritten`) in one catch-up: a
    /// server whose history keeps expiring or changing under the importer is an error, not a loop.
    package static var maxRecoveries: Int { 2 }

    /// What to do after a request failed.
    package enum Recovery: Equatable, Sendable {
        /// Replace the database from the seed or a snapshot at `minRevision` or later, then go on.
        case recover(minRevision: Int64?)
        /// Replace the database with a new snapshot, then go on.
        case rebuild
        /// Ask again (the machine changed what the next request pushes).
        case retry
        /// Drop the one change set pushed (the server refuses its size alone), then go on.
        case dropPushed
        /// Stop: the failure is the catch-up's.
        case fail
    }

    /// What a failed request's error says, for ``requestFailed(_:pushed:)``.
    package enum Failure: Equatable, Sendable {
        case historyExpired(minRevision: Int64?)
        case historyRewritten
        case forbidden
        case tooLarge
        case other
    }

    package private(set) var revision: Int64
    /// Whether the server lets the token push; `false` after a 403 to a push.
    package private(set) var mayPush = true
    package private(set) var pushLimit = PendingChanges.maxPerPush
    private var recoveries = 0
    /// Conflicting change sets kept once (by id), and the revision the database must reach before
    /// pushing again.
    package private(set) var retried: Set<String> = []
    private var retryAt: Int64 = 0

    /// Why the outbox is read: before a request, between two reads of a transaction, or at the end.
    private enum Reading {
        case beforeRequest
        case betweenReads
        case atEnd(answerHadChangeSets: Bool)
    }

    /// What follows the next ``Step/apply(stopReading:)``.
    private enum AfterApply {
        case next(hasMore: Bool, answerHadChangeSets: Bool)
        case recovery(Recovery, SyncClientError)
        case stop(SeedError)
    }

    private var reading = Reading.beforeRequest
    private var afterApply = AfterApply.next(hasMore: true, answerHadChangeSets: false)
    /// The entries of the request under way (or of the last one).
    private var inFlight: [Entry] = []
    /// A push read between two reads, made once what was read is applied.
    private var queued: [Entry] = []

    package init(revision: Int64) {
        self.revision = revision
    }

    // MARK: - Steps

    /// The first step.
    package mutating func start() -> Step { readOutbox(.beforeRequest) }

    /// The outbox gave `entries` (at most the limit asked).
    package mutating func outboxRead(_ entries: [Entry]) -> Step {
        switch reading {
        case .beforeRequest:
            return request(entries)
        case .betweenReads:
            // Nothing to push: the next answer joins this transaction. Else the push's answer starts
            // from the database: what was read is applied first, and nothing more read ahead.
            guard !entries.isEmpty else { return request([]) }
            queued = entries
            return .apply(stopReading: true)
        case .atEnd(let answerHadChangeSets):
            if isFinished(nextPush: entries.count, answerHadChangeSets: answerHadChangeSets) { return .finish }
            return request(entries)
        }
    }

    /// The request was answered. `kept`: the conflicting change sets of its push kept for the
    /// catch-up to resolve (see ``pushAnswered(kept:)``); `hadChangeSets`: the answer brought change
    /// sets that fit; `holdsEnough`: the change sets held make a transaction; `failure`: why the
    /// change set after them does not fit.
    package mutating func answered(
        kept: [String: Int64], hasMore: Bool, hadChangeSets: Bool, holdsEnough: Bool, failure: SeedError?
    ) -> Step {
        let pushed = !inFlight.isEmpty
        if pushed { pushAnswered(kept: kept) }
        if let failure {
            // What came before it is applied, as it would be alone; nothing after it is read.
            afterApply = .stop(failure)
            return .apply(stopReading: true)
        }
        afterApply = .next(hasMore: hasMore, answerHadChangeSets: hadChangeSets)
        if hasMore, !pushed, !holdsEnough { return readOutbox(.betweenReads) }
        return .apply(stopReading: false)
    }

    /// The request failed with `error`: what was held is applied, then the failure decides
    /// (``requestFailed(_:pushed:)``).
    package mutating func requestFailed(_ error: SyncClientError) -> Step {
        afterApply = .recovery(requestFailed(Failure(error), pushed: inFlight.count), error)
        return .apply(stopReading: true)
    }

    /// The change sets held were applied.
    package mutating func applied() -> Step {
        switch afterApply {
        case .stop(let failure): return .stop(failure)
        case .recovery(.recover(let minRevision), _): return .recover(minRevision: minRevision)
        case .recovery(.rebuild, _): return .rebuild
        case .recovery(.dropPushed, let error): return .drop(inFlight[0], because: error)
        case .recovery(.fail, let error): return .fail(error)
        case .recovery(.retry, _): return readOutbox(.beforeRequest)
        case .next(let hasMore, let answerHadChangeSets):
            if !queued.isEmpty {
                defer { queued = [] }
                return request(queued)
            }
            return readOutbox(hasMore ? .beforeRequest : .atEnd(answerHadChangeSets: answerHadChangeSets))
        }
    }

    /// The database was replaced, at `revision`.
    package mutating func recovered(at revision: Int64) -> Step {
        reached(revision)
        return readOutbox(.beforeRequest)
    }

    /// The entry the server refused for its size was dropped.
    package mutating func dropped() -> Step { readOutbox(.beforeRequest) }

    private mutating func readOutbox(_ purpose: Reading) -> Step {
        reading = purpose
        return pushAllowance > 0 ? .readOutbox(limit: pushAllowance) : outboxRead([])
    }

    private mutating func request(_ entries: [Entry]) -> Step {
        inFlight = entries
        return .request(pushing: entries)
    }

    // MARK: - Decisions

    /// How many local change sets the next request may push: 0 while pushing is refused or held back.
    package var pushAllowance: Int { mayPush && revision >= retryAt ? pushLimit : 0 }

    /// A request that pushed `pushed` change sets failed with `failure`.
    package mutating func requestFailed(_ failure: Failure, pushed: Int) -> Recovery {
        switch failure {
        case .historyExpired(let minRevision) where recoveries < Self.maxRecoveries:
            recoveries += 1
            return .recover(minRevision: minRevision)
        case .historyRewritten where recoveries < Self.maxRecoveries:
            recoveries += 1
            return .rebuild
        case .forbidden where pushed > 0:
            mayPush = false
            return .retry
        case .tooLarge where pushed > 1:
            // Too many or too large for this server: half as many, down to one, which then goes.
            pushLimit = pushed / 2
            return .retry
        case .tooLarge where pushed == 1:
            return .dropPushed
        default:
            return .fail
        }
    }

    /// A push was answered; `kept` are its conflicting change sets kept for the catch-up to
    /// resolve, with the server's revision of their rows.
    package mutating func pushAnswered(kept: [String: Int64]) {
        retried.formUnion(kept.keys)
        retryAt = max(retryAt, kept.values.max() ?? 0)
    }

    /// The database reached `revision` (a batch committed, or a replacement).
    package mutating func reached(_ revision: Int64) {
        self.revision = revision
    }

    /// After an answer without `hasMore`, with `nextPush` change sets read for the next request:
    /// whether the catch-up ends. It goes on while something is to be pushed, or while a kept push
    /// waits for a revision the answers are still bringing.
    package func isFinished(nextPush: Int, answerHadChangeSets: Bool) -> Bool {
        guard nextPush == 0 else { return false }
        return revision >= retryAt || !answerHadChangeSets
    }
}

extension CatchUpMachine.Failure {
    /// The failure a ``SyncClientError`` is to the catch-up.
    init(_ error: SyncClientError) {
        switch error.code {
        case .historyExpired: self = .historyExpired(minRevision: error.minRevision)
        case .historyRewritten: self = .historyRewritten
        case .forbidden: self = .forbidden
        default: self = error.status == 413 ? .tooLarge : .other
        }
    }
}
