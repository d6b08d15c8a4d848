import Foundation

/// The steps of a ``SyncEngine`` as a state machine: named phases, and for each event the phase it
/// moves to and what the engine does next. Pure: no clock, no network, no database, so every
/// transition can be tested on its own (as swift-nio and async-http-client write theirs).
///
/// ```
/// idle ──start──▶ syncing ──run done──▶ waiting ──commit or wait over──▶ syncing
///                    │  ▲                  │
///        retryable   │  └──retry time──────┼── backingOff ◀── wait failed (retryable)
///         failure    ▼                     ▼
///                 backingOff          failed (until syncNow)
/// any phase ──pause──▶ paused ──resume──▶ syncing;  any phase ──stop──▶ stopped
/// ```
///
/// A committed local edit (``edited()``) is pushed without a whole run once a run has installed the
/// database: `pushing` is a catch-up from the database's revision in its schema version, with no
/// lock wait, no schema request and no install check. While a whole run is recent, a wait that
/// ended with a commit is followed the same way and one that ended without by another wait
/// (``waitEnded(then:)``): the catch-up reads the log, which caches answer, and only the whole runs
/// ask the origin for the schema.
///
/// ```
/// waiting ──edited, or commit after a recent run──▶ pushing ──done──▶ waiting;  waiting ──wait over──▶ waiting
/// pushing ──failed──▶ syncing (a whole run decides why)
/// syncing, pushing ──edited──▶ (the same) ──done──▶ pushing;  paused ──edited, resume──▶ pushing
/// backingOff, failed ──edited──▶ syncing
/// ```
package struct EngineMachine: Sendable {
    package enum Phase: Equatable, Sendable {
        case idle
        case syncing
        /// Pushing a committed edit (a catch-up without a whole run).
        case pushing
        /// Holding a live sync request for a revision after `revision`.
        case waiting(revision: Int64, schemaVersion: Int?)
        /// The server could not be reached `attempt` times in a row.
        case backingOff(attempt: Int)
        /// A failure a retry cannot fix (a refused token, a database that does not fit): waits for
        /// ``syncNow()``.
        case failed
        case paused
        case stopped
    }

    /// What the engine does next.
    package enum Action: Equatable, Sendable {
        /// Run the importer (install, push, catch up).
        case sync
        /// Push the local edits and catch up, without a whole run.
        case push
        /// Hold a live sync request.
        case wait(revision: Int64, schemaVersion: Int?)
        /// Sleep this many seconds, then sync.
        case sleep(attempt: Int)
        /// Do nothing until an event comes (paused, failed).
        case idle
        /// End the loop.
        case stop
    }

    package private(set) var phase: Phase = .idle
    /// A user-initiated sync asked for while a run was going: run again at once after it.
    package private(set) var isUrgent = false
    /// Failures in a row that a retry may fix.
    private var failures = 0
    /// Whether a run has succeeded: the database is installed, in a version the server serves.
    private var isInstalled = false
    /// A local edit committed during a run, a push or a pause: push it after.
    private var pushesAfter = false

    package init() {}

    /// The engine starts.
    package mutating func start() -> Action {
        guard phase == .idle else { return next }
        phase = .syncing
        return .sync
    }

    /// A run ended well at `revision`: wait for the next commit, or run again at once when a sync
    /// was asked for meanwhile.
    package mutating func runSucceeded(revision: Int64, schemaVersion: Int?) -> Action {
        guard phase == .syncing || phase == .pushing else { return next }
        (failures, isInstalled) = (0, true)
        if isUrgent {
            (isUrgent, pushesAfter) = (false, false)
            phase = .syncing
            return .sync
        }
        if pushesAfter {
            pushesAfter = false
            phase = .pushing
            return .push
        }
        phase = .waiting(revision: revision, schemaVersion: schemaVersion)
        return next
    }

    /// A run or a wait failed: back off (longer each time) when `retryable` (the server could not
    /// be reached, or failed), else stay failed until ``syncNow()``.
    /// A push's failure goes to a whole run instead, which says what the failure means (a new schema
    /// version, a database replaced meanwhile, a server gone) and deals with it.
    package mutating func failed(retryable: Bool) -> Action {
        switch phase {
        case .pushing:
            phase = .syncing
            return .sync
        case .syncing, .waiting:
            isUrgent = false
            guard retryable else {
                phase = .failed
                return next
            }
            failures += 1
            phase = .backingOff(attempt: failures)
            return next
        default:
            return next
        }
    }

    /// What follows a wait (``waitEnded(then:)``).
    package enum AfterWait: Equatable, Sendable {
        /// A whole run.
        case wholeRun
        /// A catch-up alone, as a push (`.push`: a failure of it runs whole).
        case catchUp
        /// Another wait.
        case waitAgain
    }

    /// A wait ended (a commit, or the server's time limit): `then` says what follows.
    package mutating func waitEnded(then follow: AfterWait = .wholeRun) -> Action {
        guard case .waiting = phase else { return next }
        switch follow {
        case .wholeRun: phase = .syncing
        case .catchUp: phase = .pushing
        case .waitAgain: break
        }
        return next
    }

    /// The backoff delay passed: run again.
    package mutating func backoffEnded() -> Action {
        guard case .backingOff = phase else { return next }
        phase = .syncing
        return .sync
    }

    /// The user asked for a sync now. A wait, a backoff or a failure ends at once (true: interrupt
    /// the step going on); a run going on is followed by another at once.
    package mutating func syncNow() -> Bool {
        switch phase {
        case .syncing, .pushing:
            isUrgent = true
            return false
        case .waiting, .backingOff, .failed:
            phase = .syncing
            return true
        case .idle, .paused, .stopped:
            return false
        }
    }

    /// A local edit was committed: push it. A wait is interrupted (true) for a push; a run or a push
    /// going on is followed by a push; a paused engine pushes when it resumes; a backoff or a
    /// failure ends in a whole run (true), as with ``syncNow()``.
    package mutating func edited() -> Bool {
        switch phase {
        case .waiting:
            phase = .pushing
            return true
        case .syncing, .pushing, .paused:
            pushesAfter = true
            return false
        case .backingOff, .failed:
            phase = .syncing
            return true
        case .idle, .stopped:
            return false
        }
    }

    /// Pause: the step going on is interrupted (true; a run stops between transactions), and
    /// nothing runs until ``resume()``.
    package mutating func pause() -> Bool {
        switch phase {
        case .paused, .stopped, .idle:
            return false
        case .syncing, .pushing, .waiting, .backingOff, .failed:
            // An interrupted push is done again after the pause.
            if phase == .pushing { pushesAfter = true }
            phase = .paused
            isUrgent = false
            return true
        }
    }

    /// Resume after ``pause()``: run at once, or push the edits committed meanwhile when a run has
    /// installed the database.
    package mutating func resume() -> Action {
        guard phase == .paused else { return next }
        defer { pushesAfter = false }
        phase = pushesAfter && isInstalled ? .pushing : .syncing
        return next
    }

    /// Stop: the step going on is interrupted (true) and the loop ends.
    package mutating func stop() -> Bool {
        guard phase != .stopped else { return false }
        phase = .stopped
        return true
    }

    /// What the current phase does: the action after a step that was interrupted.
    package var next: Action {
        switch phase {
        case .syncing: .sync
        case .pushing: .push
        case .waiting(let revision, let version): .wait(revision: revision, schemaVersion: version)
        case .backingOff(let attempt): .sleep(attempt: attempt)
        case .stopped: .stop
        case .idle, .failed, .paused: .idle
        }
    }
}
