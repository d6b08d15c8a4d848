import Foundation

/// The edit sessions of a ``SyncEngine``: the one room for their rules. It runs an ``EditMachine``
/// (which decides) under a lock and holds the tasks it makes wait: sessions waiting for a run's
/// step, the run waiting at the gate, runs waiting to start until no session is open.
///
/// The engine asks it how a session goes in (``begin(engineIsPaused:)``) and what its end sets off
/// (``end(_:committed:)``); each run the engine starts (a whole ``SeedImporter`` run or a push) gets
/// it as a package-internal value, never through the public ``SeedImporter/Configuration``, and
/// reports its steps to it: the catch-up passes the gate before each transaction
/// (``transaction(_:)``), ends a batch early while a session wants in (``isWanted``), and tells
/// ``SeedImporter/Configuration/beforeMerge`` about the rows the engine's observers mark as being
/// edited (``rowsBeingEdited``).
///
/// A lock, not an actor: the catch-up asks ``isWanted`` between two change sets inside a database
/// transaction, where it cannot wait.
final class EditSessions: @unchecked Sendable {
    private let lock = NSLock()
    private var machine = EditMachine()
    /// Sessions waiting for the run's step to end (their route: `.gate(waits: true)`).
    private var sessionsWaiting: [CheckedContinuation<EditMachine.Route, Never>] = []
    /// The run, waiting at the gate for the gated sessions to end.
    private var runAtGate: CheckedContinuation<Void, any Error>?
    /// Runs waiting to start until no session is open.
    private var runsWaiting: [CheckedContinuation<Void, Never>] = []
    /// The rows the engine's observers mark as being edited.
    let rowsBeingEdited: @Sendable () async -> Set<RowID>

    init(rowsBeingEdited: @escaping @Sendable () async -> Set<RowID>) {
        self.rowsBeingEdited = rowsBeingEdited
    }

    // MARK: The sessions' side

    /// A session begins: its id and route, once the run's step in progress (if it waits for one) has ended.
    func begin(engineIsPaused: Bool) async -> (id: UUID, route: EditMachine.Route) {
        let id = UUID()
        let route = await withCheckedContinuation { (continuation: CheckedContinuation<EditMachine.Route, Never>) in
            let route: EditMachine.Route? = lock.withLock {
                let route = machine.begin(id, engineIsPaused: engineIsPaused)
                guard route == .gate(waits: true) else { return route }
                sessionsWaiting.append(continuation)
                return nil
            }
            if let route { continuation.resume(returning: route) }
        }
        return (id, route)
    }

    /// Session `id` ends: what that sets off (``EditMachine/Ending``) for the engine to do, the
    /// run waiting at the gate already let go; `nil` when the session is not open.
    func end(_ id: UUID, committed: Bool) -> EditMachine.Ending? {
        let (ending, run, starts) = lock.withLock {
            let ending = machine.end(id, committed: committed)
            var run: CheckedContinuation<Void, any Error>?
            if ending?.opensGate == true { (run, runAtGate) = (runAtGate, nil) }
            var starts: [CheckedContinuation<Void, Never>] = []
            if ending?.startsRuns == true { (starts, runsWaiting) = (runsWaiting, []) }
            return (ending, run, starts)
        }
        run?.resume()
        for start in starts { start.resume() }
        return ending
    }

    /// Whether session `id` is open.
    func isOpen(_ id: UUID) -> Bool { lock.withLock { machine.isOpen(id) } }

    /// Whether no session is open.
    var isEmpty: Bool { lock.withLock { machine.isEmpty } }

    // MARK: The engine's side

    /// Returns once no session is open, or ``releaseWaitingRuns()`` is called (the engine has
    /// something else to do first: a stop, a pause).
    func waitUntilNoneOpen() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let waits = lock.withLock {
                guard !machine.isEmpty else { return false }
                runsWaiting.append(continuation)
                return true
            }
            if !waits { continuation.resume() }
        }
    }

    /// Lets the runs waiting in ``waitUntilNoneOpen()`` go on.
    func releaseWaitingRuns() {
        let starts = lock.withLock {
            defer { runsWaiting = [] }
            return runsWaiting
        }
        for start in starts { start.resume() }
    }

    // MARK: The run's side

    /// A run begins: until its catch-up starts, it is one step.
    func startRun() { update { $0.startRun() } }

    /// The run has ended (or failed, or was cancelled).
    func endRun() { update { $0.endRun() } }

    /// The catch-up begins: from here on sessions wait for one transaction at most.
    func startCatchUp() { update { $0.startCatchUp() } }

    /// The catch-up has ended: the rest of the run is one step, until ``doneApplying()``.
    func endCatchUp() { update { $0.endCatchUp() } }

    /// The run applies nothing more (it closes the database, checkpointing its WAL).
    func doneApplying() { update { $0.doneApplying() } }

    /// Whether a gated session is open or waiting: a batch in progress ends at its next change set.
    var isWanted: Bool { lock.withLock { machine.isWanted } }

    /// Runs `transaction` once no gated session is open; a session that begins meanwhile waits for
    /// it to end. Throws `CancellationError` when the run is cancelled while it waits.
    func transaction<T>(_ transaction: () async throws -> T) async throws -> T {
        try await pass()
        defer { update { $0.transactionEnded() } }
        return try await transaction()
    }

    private func pass() async throws {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                // `nil`: cancelled before the handler below could see the continuation.
                let passes: Bool? = lock.withLock {
                    if machine.transactionWanted() { return true }
                    guard !Task.isCancelled else {
                        machine.gateAbandoned()
                        return nil
                    }
                    runAtGate = continuation
                    return false
                }
                switch passes {
                case true: continuation.resume()
                case nil: continuation.resume(throwing: CancellationError())
                default: break
                }
            }
        } onCancel: {
            let waiting: CheckedContinuation<Void, any Error>? = lock.withLock {
                defer { runAtGate = nil }
                if runAtGate != nil { machine.gateAbandoned() }
                return runAtGate
            }
            waiting?.resume(throwing: CancellationError())
        }
    }

    /// Applies a run's step to the machine, then lets the sessions waiting for the step go on once
    /// the run no longer holds them.
    private func update(_ step: (inout EditMachine) -> Void) {
        let waiting: [CheckedContinuation<EditMachine.Route, Never>] = lock.withLock {
            step(&machine)
            guard !machine.holdsSessions else { return [] }
            defer { sessionsWaiting = [] }
            return sessionsWaiting
        }
        for session in waiting { session.resume(returning: .gate(waits: true)) }
    }
}
