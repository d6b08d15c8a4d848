import SeedSyncClient

/// The decisions of one catch-up (``ImportSession/catchUp(_:info:)``), as a small state machine:
/// how many local change sets the next request may push, what a failed request leads to, what a
/// push's answer holds back, and when the catch-up ends. The session runs the requests and the
/// transactions; this decides, with no server and no database, and is tested transition by
/// transition (`CatchUpMachineTests`).
///
/// Its state: the database's `revision`; whether the token may push and how many change sets a
/// push may carry (halved on 413); the 410 recoveries made; and the conflicting pushes kept for
/// the catch-up to resolve (see ``ConflictResolution``), held back until the database reaches
/// the server's revision of their rows.
package struct CatchUpMachine: Sendable {
    /// The most whole-database recoveries (410) in one catch-up: a server whose history keeps
    /// expiring under the importer is an error, not a loop.
    package static let maxRecoveries = 2

    /// What to do after a request failed.
    package enum Recovery: Equatable, Sendable {
        /// Replace the database from the seed or a snapshot at `minRevision` or later, then go on.
        case recover(minRevision: Int64?)
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

    package init(revision: Int64) {
        self.revision = revision
    }

    /// How many local change sets the next request may push: 0 while pushing is refused or held back.
    package var pushAllowance: Int { mayPush && revision >= retryAt ? pushLimit : 0 }

    /// A request that pushed `pushed` change sets failed with `failure`.
    package mutating func requestFailed(_ failure: Failure, pushed: Int) -> Recovery {
        switch failure {
        case .historyExpired(let minRevision) where recoveries < Self.maxRecoveries:
            recoveries += 1
            return .recover(minRevision: minRevision)
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
        case .forbidden: self = .forbidden
        default: self = error.status == 413 ? .tooLarge : .other
        }
    }
}
