package import Foundation

/// The edit-session rules of a ``SyncEngine`` as a state machine: which way a session goes in, what
/// it waits for, and what its end sets off. Pure, like ``EngineMachine``: no clock, no lock, no
/// continuation, so each transition is tested on its own; ``EditSessions`` runs it under a lock and
/// resumes the tasks it says may go on.
///
/// A session goes in one of two ways, by what the engine is doing when it begins:
///
/// - **through the gate**, when a run (or a push) is going on. Pausing the run would cancel it and
///   lose what it downloaded (an app that opens sessions every few hundred milliseconds kept a
///   catch-up from ever applying a batch), so the session closes the gate instead. It waits for the
///   run's step in progress: during the catch-up one transaction (a batch ends early, at its next
///   change set, while a session wants in: ``isWanted``), before and after the catch-up (the
///   install check, an install, a replacement, a migration) the whole step; a run done applying
///   (closing its database) is not waited for. The run waits before its next transaction, its
///   downloads kept, until the last gated session has ended.
/// - **by a pause**, when no run is going on (the engine holds a live request or backs off): the
///   first such session pauses the engine, and the last one resumes it, unless the app had paused
///   it itself.
///
/// No run starts while a session is open (``isEmpty``). A committed session asks the engine to push
/// its edit (``Ending/pushes``), which it does without a whole run when the database is installed
/// and current (see ``EngineMachine/edited()``).
///
/// The run, as sessions see it:
///
/// | run         | what it is doing                                  | a session that begins |
/// |-------------|---------------------------------------------------|-----------------------|
/// | `none`      | no run: holding a live request, backing off, idle | pauses the engine     |
/// | `busy`      | a step: a transaction, or the run outside its catch-up | closes the gate, waits for the step |
/// | `open`      | catching up between transactions, or closing      | closes the gate, goes on at once |
/// | `atGate`    | waiting for the gated sessions to end             | closes the gate, goes on at once |
///
/// ```
/// none ──startRun──▶ busy ──startCatchUp, transactionEnded, doneApplying──▶ open
/// open ──transaction, no gated session──▶ busy;  open ──transaction, gated sessions──▶ atGate
/// atGate ──last gated session ends──▶ busy;  atGate ──run cancelled──▶ open
/// busy, open ──endCatchUp──▶ busy;  any ──endRun──▶ none
/// ```
package struct EditMachine: Sendable {
    package enum Run: Equatable, Sendable {
        case none, busy, open, atGate
    }

    /// How a session went in.
    package enum Route: Equatable, Sendable {
        /// It closed the gate of the run going on; `waits`: until the run's step in progress ends.
        case gate(waits: Bool)
        /// No run was going on: the engine pauses (`pausesEngine`: this is the first such session).
        case pause(pausesEngine: Bool)
    }

    /// What the end of a session sets off.
    package struct Ending: Equatable, Sendable {
        /// The run waiting at the gate goes on (this was the last gated session).
        package var opensGate = false
        /// The session was committed: push its edit.
        package var pushes = false
        /// The engine runs again (this was the last session that paused it, and the app had not).
        package var resumesEngine = false
        /// No session is open any more: a run waiting to start goes on.
        package var startsRuns = false

        package init(
            opensGate: Bool = false, pushes: Bool = false, resumesEngine: Bool = false, startsRuns: Bool = false
        ) {
            (self.opensGate, self.pushes, self.resumesEngine, self.startsRuns) =
                (opensGate, pushes, resumesEngine, startsRuns)
        }
    }

    package private(set) var run: Run = .none
    /// Whether a session that waits for the run's step waits now: whenever it is false, every
    /// session waiting goes on.
    package var holdsSessions: Bool { run == .busy }
    /// Open sessions that closed the gate.
    private var gated: Set<UUID> = []
    /// Open sessions that paused the engine.
    private var pausing: Set<UUID> = []
    /// Whether the last pausing session resumes the engine (the app had not paused it).
    private var resumesEngine = false

    package init() {}

    // MARK: The sessions' side

    /// Session `id` begins; `engineIsPaused`: the app has paused the engine (a session that pauses
    /// it then leaves it paused).
    package mutating func begin(_ id: UUID, engineIsPaused: Bool) -> Route {
        guard run != .none else {
            pausing.insert(id)
            guard pausing.count == 1 else { return .pause(pausesEngine: false) }
            resumesEngine = !engineIsPaused
            return .pause(pausesEngine: true)
        }
        gated.insert(id)
        return .gate(waits: run == .busy)
    }

    /// Session `id` ends (`committed`: its edit was written); `nil` when it is not open.
    package mutating func end(_ id: UUID, committed: Bool) -> Ending? {
        var ending = Ending(pushes: committed)
        if gated.remove(id) != nil {
            if gated.isEmpty, run == .atGate {
                run = .busy
                ending.opensGate = true
            }
        } else if pausing.remove(id) != nil {
            if pausing.isEmpty, resumesEngine {
                resumesEngine = false
                ending.resumesEngine = true
            }
        } else {
            return nil
        }
        ending.startsRuns = isEmpty
        return ending
    }

    /// Whether session `id` is open.
    package func isOpen(_ id: UUID) -> Bool { gated.contains(id) || pausing.contains(id) }

    /// Whether no session is open.
    package var isEmpty: Bool { gated.isEmpty && pausing.isEmpty }

    /// Whether a gated session is open: a batch being applied ends at its next change set.
    package var isWanted: Bool { !gated.isEmpty }

    // MARK: The run's side

    /// A run begins: until its catch-up starts, it is one step.
    package mutating func startRun() { run = .busy }

    /// The run has ended (or failed, or was cancelled).
    package mutating func endRun() { run = .none }

    /// The catch-up begins: from here on sessions wait for one transaction at most.
    package mutating func startCatchUp() { run = .open }

    /// The catch-up has ended: the rest of the run is one step, until ``doneApplying()``.
    package mutating func endCatchUp() {
        if run != .none { run = .busy }
    }

    /// The run applies nothing more (it closes the database): sessions need not wait for its end.
    package mutating func doneApplying() { run = .open }

    /// The run wants to begin a transaction: true when it may (no gated session is open), false when
    /// it waits at the gate for the last one to end (``Ending/opensGate``).
    package mutating func transactionWanted() -> Bool {
        guard gated.isEmpty else {
            run = .atGate
            return false
        }
        run = .busy
        return true
    }

    /// The transaction has ended.
    package mutating func transactionEnded() { run = .open }

    /// The run was cancelled while it waited at the gate.
    package mutating func gateAbandoned() {
        if run == .atGate { run = .open }
    }
}
