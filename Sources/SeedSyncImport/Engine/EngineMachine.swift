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
package struct EngineMachine: Sendable {
    package enum Phase: Equatable, Sendable {
        case idle
        case syncing
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
        guard phase == .syncing else { return next }
        failures = 0
        if isUrgent {
            isUrgent = false
            return .sync
        }
        phase = .waiting(revision: revision, schemaVersion: schemaVersion)
        return next
    }

    /// A run or a wait failed: back off (longer each time) when `retryable` (the server could not
    /// be reached, or failed), else stay failed until ``syncNow()``.
    package mutating func failed(retryable: Bool) -> Action {
        switch phase {
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

    /// A wait ended (a commit, or the server's time limit): run.
    package mutating func waitEnded() -> Action {
        guard case .waiting = phase else { return next }
        phase = .syncing
        return .sync
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
        case .syncing:
            isUrgent = true
            return false
        case .waiting, .backingOff, .failed:
            phase = .syncing
            return true
        case .idle, .paused, .stopped:
            return false
        }
    }

    /// Pause: the step going on is interrupted (true; a run stops between transactions), and
    /// nothing runs until ``resume()``.
    package mutating func pause() -> Bool {
        switch phase {
        case .paused, .stopped, .idle:
            return false
        case .syncing, .waiting, .backingOff, .failed:
            phase = .paused
            isUrgent = false
            return true
        }
    }

    /// Resume after ``pause()``: run at once.
    package mutating func resume() -> Action {
        guard phase == .paused else { return next }
        phase = .syncing
        return .sync
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
        case .waiting(let revision, let version): .wait(revision: revision, schemaVersion: version)
        case .backingOff(let attempt): .sleep(attempt: attempt)
        case .stopped: .stop
        case .idle, .failed, .paused: .idle
        }
    }
}
