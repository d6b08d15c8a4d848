import SeedSyncImport
import Testing

/// `EngineMachine`'s transitions, one by one: no server, no clock.
@Suite struct EngineMachineTests {
    @Test func aRunThenAWaitThenARunAgain() {
        var machine = EngineMachine()
        #expect(machine.start() == .sync)
        #expect(machine.start() == .sync, "a second start changes nothing")
        #expect(machine.runSucceeded(revision: 7, schemaVersion: 2) == .wait(revision: 7, schemaVersion: 2))
        #expect(machine.phase == .waiting(revision: 7, schemaVersion: 2))
        #expect(machine.waitEnded() == .sync)
        #expect(machine.phase == .syncing)
    }

    /// After a wait: another wait from the same revision, a catch-up alone (as a push, which a
    /// failure turns into a whole run), or a whole run.
    @Test func aWaitIsFollowedByAnotherWaitACatchUpOrAWholeRun() {
        var machine = EngineMachine()
        _ = machine.start()
        _ = machine.runSucceeded(revision: 7, schemaVersion: 2)
        #expect(machine.waitEnded(then: .waitAgain) == .wait(revision: 7, schemaVersion: 2))
        #expect(machine.waitEnded(then: .catchUp) == .push)
        #expect(machine.runSucceeded(revision: 8, schemaVersion: 2) == .wait(revision: 8, schemaVersion: 2))
        #expect(machine.waitEnded(then: .catchUp) == .push)
        #expect(machine.failed(retryable: true) == .sync, "a catch-up that fails runs whole")
        _ = machine.runSucceeded(revision: 9, schemaVersion: 2)
        #expect(machine.waitEnded(then: .wholeRun) == .sync)
        #expect(machine.waitEnded(then: .catchUp) == .sync, "a wait's end outside a wait moves nothing")
    }

    @Test func retryableFailuresBackOffLongerEachTimeAndASuccessResetsThem() {
        var machine = EngineMachine()
        _ = machine.start()
        #expect(machine.failed(retryable: true) == .sleep(attempt: 1))
        #expect(machine.backoffEnded() == .sync)
        #expect(machine.failed(retryable: true) == .sleep(attempt: 2))
        #expect(machine.backoffEnded() == .sync)
        #expect(machine.runSucceeded(revision: 3, schemaVersion: nil) == .wait(revision: 3, schemaVersion: nil))
        #expect(machine.failed(retryable: true) == .sleep(attempt: 1), "a wait that fails after a success starts over")
    }

    @Test func aFailureARetryCannotFixWaitsForSyncNow() {
        var machine = EngineMachine()
        _ = machine.start()
        #expect(machine.failed(retryable: false) == .idle)
        #expect(machine.phase == .failed)
        #expect(machine.backoffEnded() == .idle, "no stray timer restarts it")
        let interrupts1 = machine.syncNow()
        #expect(interrupts1, "syncNow ends the failure")
        #expect(machine.next == .sync)
    }

    @Test func syncNowEndsAWaitOrABackoffAndFollowsARunWithAnother() {
        var machine = EngineMachine()
        _ = machine.start()
        let interrupts2 = machine.syncNow()
        #expect(!interrupts2, "a run going on is not interrupted")
        #expect(machine.runSucceeded(revision: 1, schemaVersion: nil) == .sync, "but followed by another at once")
        #expect(machine.runSucceeded(revision: 2, schemaVersion: nil) == .wait(revision: 2, schemaVersion: nil))
        let interrupts3 = machine.syncNow()
        #expect(interrupts3, "a wait is interrupted")
        #expect(machine.next == .sync)
        #expect(machine.waitEnded() == .sync, "the interrupted wait's end does not move it again")
        _ = machine.failed(retryable: true)
        let interrupts4 = machine.syncNow()
        #expect(interrupts4, "a backoff is interrupted")
        #expect(machine.next == .sync)
    }

    @Test func pauseHoldsEverythingUntilResume() {
        var machine = EngineMachine()
        let interrupts5 = machine.pause()
        #expect(!interrupts5, "nothing to pause before the start")
        _ = machine.start()
        let interrupts6 = machine.pause()
        #expect(interrupts6)
        #expect(machine.next == .idle)
        #expect(machine.runSucceeded(revision: 5, schemaVersion: nil) == .idle, "the interrupted run's end waits")
        let interrupts7 = machine.syncNow()
        #expect(!interrupts7, "syncNow does not end a pause")
        #expect(machine.resume() == .sync)
        #expect(machine.phase == .syncing)
    }

    @Test func stopEndsEveryPhase() {
        for prepare in [
            { (m: inout EngineMachine) in _ = m.start() },
            { (m: inout EngineMachine) in
                _ = m.start()
                _ = m.runSucceeded(revision: 1, schemaVersion: nil)
            },
            { (m: inout EngineMachine) in
                _ = m.start()
                _ = m.failed(retryable: true)
            },
            { (m: inout EngineMachine) in
                _ = m.start()
                _ = m.failed(retryable: false)
            },
            { (m: inout EngineMachine) in
                _ = m.start()
                _ = m.pause()
            },
        ] {
            var machine = EngineMachine()
            prepare(&machine)
            let interrupts8 = machine.stop()
            #expect(interrupts8)
            #expect(machine.next == .stop)
            let interrupts9 = machine.stop()
            #expect(!interrupts9)
            #expect(machine.resume() == .stop)
            #expect(machine.runSucceeded(revision: 9, schemaVersion: nil) == .stop)
        }
    }

    // MARK: Pushing a committed edit

    @Test func anEditWhileWaitingIsPushedWithoutAWholeRun() {
        var machine = EngineMachine()
        _ = machine.start()
        _ = machine.runSucceeded(revision: 7, schemaVersion: 1)
        let interrupts = machine.edited()
        #expect(interrupts, "the held request ends")
        #expect(machine.phase == .pushing)
        #expect(machine.next == .push)
        #expect(machine.waitEnded() == .push, "the interrupted wait's end does not turn the push into a run")
        #expect(machine.runSucceeded(revision: 8, schemaVersion: 1) == .wait(revision: 8, schemaVersion: 1))
    }

    @Test func anEditDuringARunOrAPushIsPushedAfterIt() {
        var machine = EngineMachine()
        _ = machine.start()
        let duringRun = machine.edited()
        #expect(!duringRun, "a run going on is not interrupted")
        #expect(machine.runSucceeded(revision: 3, schemaVersion: 1) == .push)
        let duringPush = machine.edited()
        #expect(!duringPush)
        #expect(machine.runSucceeded(revision: 4, schemaVersion: 1) == .push, "an edit during a push gets a push")
        #expect(machine.runSucceeded(revision: 5, schemaVersion: 1) == .wait(revision: 5, schemaVersion: 1))
    }

    @Test func syncNowDuringAPushIsFollowedByAWholeRun() {
        var machine = EngineMachine()
        _ = machine.start()
        _ = machine.runSucceeded(revision: 7, schemaVersion: 1)
        _ = machine.edited()
        let interrupts = machine.syncNow()
        #expect(!interrupts)
        #expect(machine.runSucceeded(revision: 8, schemaVersion: 1) == .sync)
    }

    @Test func aPushThatFailsGoesToAWholeRunWhichSaysWhy() {
        var machine = EngineMachine()
        _ = machine.start()
        _ = machine.runSucceeded(revision: 7, schemaVersion: 1)
        _ = machine.edited()
        #expect(machine.failed(retryable: false) == .sync, "not failed: a run sees what the push met")
        #expect(machine.phase == .syncing)
        #expect(machine.failed(retryable: true) == .sleep(attempt: 1))
    }

    @Test func anEditWhileBackingOffOrFailedRunsWhole() {
        for retryable in [true, false] {
            var machine = EngineMachine()
            _ = machine.start()
            _ = machine.failed(retryable: retryable)
            let interrupts = machine.edited()
            #expect(interrupts)
            #expect(machine.next == .sync)
        }
    }

    @Test func aPausedEngineWithAnEditPushesWhenItResumes() {
        var machine = EngineMachine()
        _ = machine.start()
        _ = machine.pause()
        let beforeAnyRun = machine.edited()
        #expect(!beforeAnyRun, "nothing runs in a pause")
        #expect(machine.resume() == .sync, "no run has installed the database: a whole run pushes")
        _ = machine.runSucceeded(revision: 7, schemaVersion: 1)
        _ = machine.pause()
        #expect(machine.resume() == .sync, "a resume without an edit runs whole, as before")
        _ = machine.runSucceeded(revision: 7, schemaVersion: 1)
        _ = machine.pause()
        _ = machine.edited()
        #expect(machine.resume() == .push)
        _ = machine.pause()
        #expect(machine.resume() == .push, "a push the pause interrupted is done again")
        #expect(machine.runSucceeded(revision: 8, schemaVersion: 1) == .wait(revision: 8, schemaVersion: 1))
        _ = machine.pause()
        #expect(machine.resume() == .sync, "a push done is not done again")
    }

    @Test func anEditBeforeTheStartOrAfterTheStopDoesNothing() {
        var machine = EngineMachine()
        let beforeStart = machine.edited()
        #expect(!beforeStart)
        #expect(machine.start() == .sync, "the first run pushes it")
        _ = machine.stop()
        let afterStop = machine.edited()
        #expect(!afterStop)
        #expect(machine.next == .stop)
    }
}
