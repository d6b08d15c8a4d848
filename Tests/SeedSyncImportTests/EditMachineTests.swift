import Foundation
import SeedSyncImport
import Testing

/// `EditMachine`'s transitions, one by one: the ways an edit session goes in, what it waits for,
/// and what its end sets off. No engine, no lock.
@Suite struct EditMachineTests {
    let a = UUID()
    let b = UUID()

    @Test func withNoRunTheFirstSessionPausesTheEngineAndTheLastResumesIt() {
        var machine = EditMachine()
        #expect(machine.begin(a, engineIsPaused: false) == .pause(pausesEngine: true))
        #expect(machine.begin(b, engineIsPaused: true) == .pause(pausesEngine: false), "paused by the first")
        #expect(machine.isOpen(a) && !machine.isEmpty)
        #expect(!machine.isWanted, "no run to end a batch early")
        #expect(machine.end(a, committed: false) == .init())
        #expect(machine.end(b, committed: true) == .init(pushes: true, resumesEngine: true, startsRuns: true))
        #expect(machine.isEmpty)
        #expect(machine.end(b, committed: true) == nil, "a session ends once")
    }

    @Test func theAppsOwnPauseOutlastsTheSessions() {
        var machine = EditMachine()
        #expect(machine.begin(a, engineIsPaused: true) == .pause(pausesEngine: true))
        #expect(machine.end(a, committed: false) == .init(startsRuns: true), "the engine stays paused")
    }

    @Test func aSessionDuringARunsFirstStepWaitsForIt() {
        var machine = EditMachine()
        machine.startRun()
        #expect(machine.begin(a, engineIsPaused: false) == .gate(waits: true))
        #expect(machine.holdsSessions)
        #expect(machine.isWanted)
        machine.startCatchUp()
        #expect(!machine.holdsSessions, "the catch-up lets the waiting session in")
    }

    @Test func duringTheCatchUpASessionWaitsForOneTransactionAndTheRunForTheLastSession() {
        var machine = EditMachine()
        machine.startRun()
        machine.startCatchUp()
        let passes = machine.transactionWanted()
        #expect(passes)
        #expect(machine.begin(a, engineIsPaused: false) == .gate(waits: true), "a transaction is going on")
        machine.transactionEnded()
        #expect(!machine.holdsSessions)
        #expect(machine.begin(b, engineIsPaused: false) == .gate(waits: false), "between transactions")
        let waits = !machine.transactionWanted()
        #expect(waits, "the run waits at the gate")
        #expect(machine.run == .atGate)
        #expect(machine.end(a, committed: true) == .init(pushes: true), "another gated session is open")
        #expect(machine.end(b, committed: false) == .init(opensGate: true, startsRuns: true))
        #expect(machine.run == .busy, "the run goes on into its transaction")
    }

    @Test func theRunAfterItsCatchUpIsOneStepUntilItIsDoneApplying() {
        var machine = EditMachine()
        machine.startRun()
        machine.startCatchUp()
        machine.endCatchUp()
        #expect(machine.begin(a, engineIsPaused: false) == .gate(waits: true), "a migration may follow")
        machine.doneApplying()
        #expect(!machine.holdsSessions, "closing the database is not waited for")
        #expect(machine.begin(b, engineIsPaused: false) == .gate(waits: false))
        machine.endRun()
        #expect(machine.run == .none)
        #expect(machine.end(a, committed: false) == .init(), "a gated session outlives the run")
        #expect(machine.end(b, committed: true) == .init(pushes: true, startsRuns: true))
        #expect(machine.begin(a, engineIsPaused: false) == .pause(pausesEngine: true), "no run: a pause")
    }

    @Test func aRunCancelledAtTheGateLeavesItOpen() {
        var machine = EditMachine()
        machine.startRun()
        machine.startCatchUp()
        _ = machine.begin(a, engineIsPaused: false)
        let waits = !machine.transactionWanted()
        #expect(waits)
        machine.gateAbandoned()
        #expect(machine.run == .open)
        #expect(machine.end(a, committed: false) == .init(startsRuns: true), "no run to let through")
    }
}
