import SeedSyncImport
import Testing

/// `CatchUpMachine`'s transitions, one by one: no server, no database.
@Suite struct CatchUpMachineTests {
    @Test func aCatchUpEndsWhenNothingIsLeftToPush() {
        var machine = CatchUpMachine(revision: 10)
        #expect(machine.pushAllowance == PendingChanges.maxPerPush)
        machine.reached(40)
        #expect(machine.revision == 40)
        #expect(machine.isFinished(nextPush: 0, answerHadChangeSets: true))
        #expect(!machine.isFinished(nextPush: 3, answerHadChangeSets: false), "local change sets still to push")
    }

    @Test func aHistoryExpiredIsRecoveredTwiceThenFails() {
        var machine = CatchUpMachine(revision: 1)
        #expect(machine.requestFailed(.historyExpired(minRevision: 50), pushed: 0) == .recover(minRevision: 50))
        #expect(machine.requestFailed(.historyExpired(minRevision: nil), pushed: 3) == .recover(minRevision: nil))
        #expect(machine.requestFailed(.historyExpired(minRevision: 60), pushed: 0) == .fail)
    }

    @Test func aForbiddenPushCatchesUpWithoutPushing() {
        var machine = CatchUpMachine(revision: 1)
        #expect(machine.requestFailed(.forbidden, pushed: 0) == .fail, "a read refused is the run's failure")
        #expect(machine.requestFailed(.forbidden, pushed: 2) == .retry)
        #expect(!machine.mayPush && machine.pushAllowance == 0)
        #expect(machine.isFinished(nextPush: 0, answerHadChangeSets: false))
    }

    @Test func aPushTooLargeIsHalvedDownToOneWhichIsDropped() {
        var machine = CatchUpMachine(revision: 1)
        #expect(machine.requestFailed(.tooLarge, pushed: 100) == .retry)
        #expect(machine.pushAllowance == 50)
        #expect(machine.requestFailed(.tooLarge, pushed: 3) == .retry)
        #expect(machine.pushAllowance == 1)
        #expect(machine.requestFailed(.tooLarge, pushed: 1) == .dropPushed)
        #expect(machine.requestFailed(.tooLarge, pushed: 0) == .fail, "a read too large is the run's failure")
        #expect(machine.requestFailed(.other, pushed: 5) == .fail)
    }

    @Test func aKeptConflictHoldsPushesBackUntilTheServersRevisionIsReached() {
        var machine = CatchUpMachine(revision: 10)
        machine.pushAnswered(kept: ["a": 14, "b": 12])
        #expect(machine.retried == ["a", "b"])
        #expect(machine.pushAllowance == 0, "held back until revision 14")
        #expect(!machine.isFinished(nextPush: 0, answerHadChangeSets: true), "the answers still bring revision 14")
        #expect(
            machine.isFinished(nextPush: 0, answerHadChangeSets: false), "an answer with nothing ends it all the same")
        machine.reached(14)
        #expect(machine.pushAllowance == PendingChanges.maxPerPush)
        machine.pushAnswered(kept: [:])
        #expect(machine.pushAllowance == PendingChanges.maxPerPush, "an answer keeping nothing holds nothing back")
    }
}
