import NIOConcurrencyHelpers

/// The newest revision the server knows of, and the sync requests held until a newer one.
///
/// One watch of the store (``SyncStore/watchRevisions(_:)``) calls ``publish(_:)``; each held
/// request calls ``wait(after:until:)``. A publish that raises the revision wakes every request
/// waiting for less in one pass, so a commit costs one read of the store however many clients
/// wait. A held request costs a slot in a dictionary, with its deadline: one sweeper task (running
/// while any request is held) ends the waits whose deadline passed, every quarter of a second,
/// instead of a sleeping task per request (a task and its timer cost a held request several KiB).
///
/// ```swift
/// switch await signal.wait(after: 41, until: .now + .seconds(55)) {
/// case .newer: // read the change feed again
/// case .timedOut, .closed: // answer with no change set
/// case .full: // 503
/// }
/// ```
package final class RevisionSignal: Sendable {
    /// How a wait ended.
    package enum Outcome: Equatable, Sendable {
        /// A revision after the one waited on committed.
        case newer
        /// The deadline passed first (or the request was cancelled).
        case timedOut
        /// The server is shutting down: every wait ends at once.
        case closed
        /// ``capacity`` requests already wait; this one was not held.
        case full
    }

    /// A wait as it starts: answered at once, or held in a slot.
    private enum Admission {
        case answered(Outcome)
        case held(UInt64)
    }

    private enum Slot {
        case pending
        case waiting(CheckedContinuation<Void, Never>)
        case released
    }

    private struct State {
        /// The newest revision published; -1 until the watch first reports.
        var revision: Int64 = -1
        var slots: [UInt64: (after: Int64, deadline: ContinuousClock.Instant, slot: Slot)] = [:]
        var nextID: UInt64 = 0
        var isClosed = false
        /// Whether the sweeper task runs (it ends when no request is held).
        var isSweeping = false
    }

    /// How often the sweeper ends the waits whose deadline passed.
    static var sweepInterval: Duration { .milliseconds(250) }

    /// The most requests held at once.
    package let capacity: Int
    private let state = NIOLockedValueBox(State())

    package init(capacity: Int) {
        self.capacity = capacity
    }

    /// The requests held now.
    package var waiting: Int { state.withLockedValue { $0.slots.count } }

    /// Records that `revision` committed and wakes every request waiting for an earlier one.
    package func publish(_ revision: Int64) {
        let woken = state.withLockedValue { state -> [CheckedContinuation<Void, Never>] in
            guard revision > state.revision else { return [] }
            state.revision = revision
            return Self.release(in: &state) { $0 < revision }
        }
        for continuation in woken { continuation.resume() }
    }

    /// Ends every wait now and every later one at once: the server is shutting down.
    package func close() {
        let woken = state.withLockedValue { state -> [CheckedContinuation<Void, Never>] in
            state.isClosed = true
            return Self.release(in: &state) { _ in true }
        }
        for continuation in woken { continuation.resume() }
    }

    /// Waits until a revision after `revision` is published, `deadline` passes, the signal closes
    /// or the task is cancelled; returns at once when one of them already happened, or with
    /// ``Outcome/full`` when ``capacity`` requests wait.
    package func wait(after revision: Int64, until deadline: ContinuousClock.Instant) async -> Outcome {
        let admitted = state.withLockedValue { state -> (Admission, startsSweeper: Bool) in
            if state.isClosed { return (.answered(.closed), false) }
            if state.revision > revision { return (.answered(.newer), false) }
            if state.slots.count >= capacity { return (.answered(.full), false) }
            if deadline <= .now { return (.answered(.timedOut), false) }
            let id = state.nextID
            state.nextID += 1
            state.slots[id] = (revision, deadline, .pending)
            defer { state.isSweeping = true }
            return (.held(id), !state.isSweeping)
        }
        if admitted.startsSweeper { Task { await self.sweep() } }
        guard case .held(let id) = admitted.0 else {
            if case .answered(let outcome) = admitted.0 { return outcome }
            return .timedOut
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in hold(id, continuation) }
        } onCancel: {
            self.release(id)
        }
        return state.withLockedValue { state in
            state.isClosed ? .closed : state.revision > revision ? .newer : .timedOut
        }
    }

    /// Ends the waits whose deadline passed, every ``sweepInterval``, until no request is held.
    private func sweep() async {
        while true {
            try? await Task.sleep(for: Self.sweepInterval)
            let now = ContinuousClock.now
            let (woken, goesOn) = state.withLockedValue { state -> ([CheckedContinuation<Void, Never>], Bool) in
                let expired = state.slots.compactMap { id, entry in entry.deadline <= now ? id : nil }
                let woken = expired.compactMap { id in Self.release(id, in: &state) }
                if state.slots.isEmpty { state.isSweeping = false }
                return (woken, state.isSweeping)
            }
            for continuation in woken { continuation.resume() }
            if !goesOn { return }
        }
    }

    private func hold(_ id: UInt64, _ continuation: CheckedContinuation<Void, Never>) {
        let parked = state.withLockedValue { state -> Bool in
            guard let entry = state.slots[id], case .pending = entry.slot else {
                state.slots[id] = nil
                return false
            }
            state.slots[id] = (entry.after, entry.deadline, .waiting(continuation))
            return true
        }
        if !parked { continuation.resume() }
    }

    /// Ends the wait of slot `id` (its deadline passed or its request was cancelled).
    private func release(_ id: UInt64) {
        state.withLockedValue { state in Self.release(id, in: &state) }?.resume()
    }

    /// Releases the slots whose `after` matches (see ``release(_:in:)``) and returns the
    /// continuations to resume.
    private static func release(
        in state: inout State, where matches: (Int64) -> Bool
    ) -> [CheckedContinuation<Void, Never>] {
        let ids = state.slots.compactMap { id, entry in matches(entry.after) ? id : nil }
        return ids.compactMap { id in release(id, in: &state) }
    }

    /// Releases slot `id`: a parked continuation is removed and returned for resuming; a pending
    /// slot is marked so its ``hold(_:_:)`` returns at once.
    private static func release(_ id: UInt64, in state: inout State) -> CheckedContinuation<Void, Never>? {
        guard let entry = state.slots[id] else { return nil }
        switch entry.slot {
        case .waiting(let continuation):
            state.slots[id] = nil
            return continuation
        case .pending:
            state.slots[id] = (entry.after, entry.deadline, .released)
            return nil
        case .released:
            return nil
        }
    }
}
