import Foundation

/// Where a ``SyncEngine``'s run lets edit sessions in without giving up its work.
///
/// Pausing a run cancels it: what it downloaded and had not applied is lost, and the next run
/// starts over (the install check, the schema, the first request). An app that opens edit
/// sessions every few hundred milliseconds kept the catch-up from ever applying a batch. So an
/// edit session that begins during a run closes this gate instead of pausing the engine:
///
/// - during the catch-up it waits only for the transaction in progress to end (a push's results,
///   or a batch of change sets, which ends early, at the next change set, when a session waits:
///   ``isWanted``), and the run waits before its next one, its downloads kept, until the last
///   session has ended; a 410 recovery in the catch-up downloads its snapshot (or copies the seed)
///   while sessions are open, and its replacement of the database is one such transaction;
/// - before the catch-up (the install check, an install, a replacement) and after it (a migration
///   and its catch-up), the run is one step: the session waits for the catch-up to start, or the
///   run to have applied everything (its close, a checkpoint of the WAL, is not waited for).
///
/// Between runs (a held live sync request, a backoff) the engine pauses as before: nothing is lost.
final class BatchGate: @unchecked Sendable {
    private let lock = NSLock()
    /// Whether a run is going on (between ``startRun()`` and ``endRun()``).
    private var running = false
    /// Whether the run is in a step an edit session waits for: a gated transaction, or the run
    /// outside its catch-up.
    private var busy = false
    /// Open edit sessions that closed the gate.
    private var closed = 0
    /// The run, waiting for the gate to open.
    private var run: CheckedContinuation<Void, any Error>?
    /// Edit sessions waiting for the run's step to end.
    private var edits: [CheckedContinuation<Bool, Never>] = []

    // MARK: The run's side

    /// A run begins: until its catch-up starts, it is one step.
    func startRun() {
        lock.withLock {
            running = true
            busy = true
        }
    }

    /// The run has ended (or failed, or was cancelled).
    func endRun() {
        release {
            running = false
            busy = false
        }
    }

    /// The catch-up begins: from here on edit sessions wait for one transaction at most.
    func startCatchUp() {
        release { busy = false }
    }

    /// The catch-up has ended: the rest of the run is one step (a migration and its catch-up
    /// may follow), until ``doneApplying()``.
    func endCatchUp() {
        lock.withLock { busy = running }
    }

    /// The run applies nothing more (it closes the database, checkpointing its WAL): edit
    /// sessions need not wait for its end.
    func doneApplying() {
        release { busy = false }
    }

    /// Runs `transaction` once no edit session is open; an edit session that begins meanwhile
    /// waits for it to end. Throws `CancellationError` when the run is cancelled while it waits.
    func transaction<T>(_ transaction: () async throws -> T) async throws -> T {
        try await pass()
        defer { release { busy = false } }
        return try await transaction()
    }

    private func pass() async throws {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                // `nil`: cancelled before the handler below could see the continuation.
                let open: Bool? = lock.withLock {
                    guard closed > 0 else {
                        busy = true
                        return true
                    }
                    guard !Task.isCancelled else { return nil }
                    run = continuation
                    return false
                }
                switch open {
                case true: continuation.resume()
                case nil: continuation.resume(throwing: CancellationError())
                default: break
                }
            }
        } onCancel: {
            let waiting: CheckedContinuation<Void, any Error>? = lock.withLock {
                defer { run = nil }
                return run
            }
            waiting?.resume(throwing: CancellationError())
        }
    }

    /// Applies `change` under ``lock``, then lets the edit sessions waiting for the step go on.
    private func release(_ change: () -> Void) {
        let waiting: [CheckedContinuation<Bool, Never>] = lock.withLock {
            change()
            defer { edits = [] }
            return edits
        }
        for edit in waiting { edit.resume(returning: true) }
    }

    // MARK: The edit sessions' side

    /// Whether an edit session is open or waiting: a batch in progress ends at its next change set.
    var isWanted: Bool { lock.withLock { closed > 0 } }

    /// Closes the gate for one edit session, if a run is going on, and waits for its step in
    /// progress to end; `false` when no run is going on (the engine pauses instead).
    func close() async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let answer: Bool? = lock.withLock {
                guard running else { return false }
                closed += 1
                guard busy else { return true }
                edits.append(continuation)
                return nil
            }
            if let answer { continuation.resume(returning: answer) }
        }
    }

    /// Opens the gate for one edit session that closed it; the last one lets the run go on.
    func open() {
        let waiting: CheckedContinuation<Void, any Error>? = lock.withLock {
            closed = max(0, closed - 1)
            guard closed == 0, let run else { return nil }
            self.run = nil
            busy = true
            return run
        }
        waiting?.resume()
    }
}

/// What a ``SyncEngine``'s edit sessions ask of its runs, handed to each run (never through the
/// public ``SeedImporter/Configuration``): the gate the catch-up passes before each transaction,
/// and the rows the observers mark as being edited, which a batch that writes them tells
/// ``SeedImporter/Configuration/beforeMerge`` about as it does rows with pending edits.
struct EditHooks: Sendable {
    let gate: BatchGate
    let rowsBeingEdited: @Sendable () async -> Set<RowID>
}
