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
}
