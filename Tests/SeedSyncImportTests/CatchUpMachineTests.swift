import SeedSyncClient
import SeedSyncImport
import SeedSyncSeed
import Testing

/// The machine over entries named by strings.
typealias Machine = CatchUpMachine<String>

/// `CatchUpMachine`'s transitions, one by one: no server, no database.
@Suite struct CatchUpMachineTests {
    @Test func aCatchUpEndsWhenNothingIsLeftToPush() {
        var machine = Machine(revision: 10)
        #expect(machine.pushAllowance == PendingChanges.maxPerPush)
        machine.reached(40)
        #expect(machine.revision == 40)
        #expect(machine.isFinished(nextPush: 0, answerHadChangeSets: true))
        #expect(!machine.isFinished(nextPush: 3, answerHadChangeSets: false), "local change sets still to push")
    }

    @Test func aHistoryExpiredIsRecoveredTwiceThenFails() {
        var machine = Machine(revision: 1)
        #expect(machine.requestFailed(.historyExpired(minRevision: 50), pushed: 0) == .recover(minRevision: 50))
        #expect(machine.requestFailed(.historyExpired(minRevision: nil), pushed: 3) == .recover(minRevision: nil))
        #expect(machine.requestFailed(.historyExpired(minRevision: 60), pushed: 0) == .fail)
    }

    /// 409 `history_rewritten` rebuilds from a snapshot, and counts with the 410 recoveries.
    @Test func aRewrittenHistoryRebuildsAndCountsWithTheExpiredOnes() {
        var machine = Machine(revision: 1)
        #expect(machine.requestFailed(.historyRewritten, pushed: 2) == .rebuild)
        #expect(machine.requestFailed(.historyExpired(minRevision: 50), pushed: 0) == .recover(minRevision: 50))
        #expect(machine.requestFailed(.historyRewritten, pushed: 0) == .fail)
        var stepping = Machine(revision: 10)
        _ = stepping.start()
        _ = stepping.outboxRead([])
        let rewritten = SyncClientError(.historyRewritten, "409", status: 409, serverCode: "history_rewritten")
        #expect(stepping.requestFailed(rewritten).name == "apply(stopReading: true)")
        #expect(stepping.applied().name == "rebuild")
    }

    @Test func aForbiddenPushCatchesUpWithoutPushing() {
        var machine = Machine(revision: 1)
        #expect(machine.requestFailed(.forbidden, pushed: 0) == .fail, "a read refused is the run's failure")
        #expect(machine.requestFailed(.forbidden, pushed: 2) == .retry)
        #expect(!machine.mayPush && machine.pushAllowance == 0)
        #expect(machine.isFinished(nextPush: 0, answerHadChangeSets: false))
    }

    @Test func aPushTooLargeIsHalvedDownToOneWhichIsDropped() {
        var machine = Machine(revision: 1)
        #expect(machine.requestFailed(.tooLarge, pushed: 100) == .retry)
        #expect(machine.pushAllowance == 50)
        #expect(machine.requestFailed(.tooLarge, pushed: 3) == .retry)
        #expect(machine.pushAllowance == 1)
        #expect(machine.requestFailed(.tooLarge, pushed: 1) == .dropPushed)
        #expect(machine.requestFailed(.tooLarge, pushed: 0) == .fail, "a read too large is the run's failure")
        #expect(machine.requestFailed(.other, pushed: 5) == .fail)
    }

    @Test func aKeptConflictHoldsPushesBackUntilTheServersRevisionIsReached() {
        var machine = Machine(revision: 10)
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

    // MARK: - Steps

    @Test func aCatchUpReadsTheOutboxRequestsAppliesAndFinishes() {
        var machine = Machine(revision: 10)
        #expect(machine.start().name == "readOutbox(\(PendingChanges.maxPerPush))")
        #expect(machine.outboxRead([]).name == "request([])", "nothing to push: the change feed")
        let answered = machine.answered(
            kept: [:], hasMore: false, hadChangeSets: true, holdsEnough: false, failure: nil)
        #expect(answered.name == "apply(stopReading: false)")
        #expect(machine.applied().name == "readOutbox(\(PendingChanges.maxPerPush))", "the end: anything to push?")
        #expect(machine.outboxRead([]).name == "finish")
    }

    @Test func answersAreReadOnIntoOneTransactionUntilItHoldsEnough() {
        var machine = Machine(revision: 10)
        _ = machine.start()
        _ = machine.outboxRead([])
        let more = machine.answered(kept: [:], hasMore: true, hadChangeSets: true, holdsEnough: false, failure: nil)
        #expect(more.name == "readOutbox(\(PendingChanges.maxPerPush))", "a push first, if one waits")
        #expect(machine.outboxRead([]).name == "request([])", "none: the next answer joins the transaction")
        let full = machine.answered(kept: [:], hasMore: true, hadChangeSets: true, holdsEnough: true, failure: nil)
        #expect(full.name == "apply(stopReading: false)", "a transaction's worth: applied, the feed read on")
        #expect(machine.applied().name == "readOutbox(\(PendingChanges.maxPerPush))")
        #expect(machine.outboxRead([]).name == "request([])", "hasMore: not the end")
    }

    @Test func aPushFoundBetweenReadsIsMadeOnceWhatWasReadIsApplied() {
        var machine = Machine(revision: 10)
        _ = machine.start()
        _ = machine.outboxRead([])
        _ = machine.answered(kept: [:], hasMore: true, hadChangeSets: true, holdsEnough: false, failure: nil)
        #expect(machine.outboxRead(["a"]).name == "apply(stopReading: true)", "its answer starts from the database")
        #expect(machine.applied().name == "request([\"a\"])")
        let answered = machine.answered(
            kept: ["a": 14], hasMore: false, hadChangeSets: true, holdsEnough: false, failure: nil)
        #expect(answered.name == "apply(stopReading: false)" && machine.retried == ["a"])
        #expect(machine.applied().name == "request([])", "held back until revision 14: no outbox read")
        let empty = machine.answered(kept: [:], hasMore: false, hadChangeSets: false, holdsEnough: false, failure: nil)
        #expect(empty.name == "apply(stopReading: false)")
        #expect(machine.applied().name == "finish", "an answer with nothing ends it all the same")
    }

    @Test func aFailedRequestAppliesWhatWasHeldThenRecoversDropsOrFails() {
        var machine = Machine(revision: 10)
        _ = machine.start()
        _ = machine.outboxRead(["a"])
        let expired = SyncClientError(.historyExpired, "410", status: 410, minRevision: 50)
        #expect(machine.requestFailed(expired).name == "apply(stopReading: true)")
        #expect(machine.applied().name == "recover(50)")
        #expect(machine.recovered(at: 60).name == "readOutbox(\(PendingChanges.maxPerPush))" && machine.revision == 60)
        #expect(machine.outboxRead(["a"]).name == "request([\"a\"])")
        let tooLarge = SyncClientError(.serverError, "413", status: 413)
        #expect(machine.requestFailed(tooLarge).name == "apply(stopReading: true)")
        #expect(machine.applied().name == "drop(a)", "one change set too large: dropped")
        #expect(machine.dropped().name == "readOutbox(\(PendingChanges.maxPerPush))")
        #expect(machine.outboxRead([]).name == "request([])")
        let refused = SyncClientError(.forbidden, "403", status: 403)
        _ = machine.requestFailed(refused)
        #expect(machine.applied().name == "fail(forbidden)", "a read refused is the run's failure")
    }

    @Test func aRefusedPushCatchesUpWithoutReadingTheOutbox() {
        var machine = Machine(revision: 10)
        _ = machine.start()
        _ = machine.outboxRead(["a", "b"])
        _ = machine.requestFailed(SyncClientError(.forbidden, "403", status: 403))
        #expect(machine.applied().name == "request([])", "the token may not push: no outbox read")
        #expect(!machine.mayPush)
    }

    @Test func aChangeSetThatDoesNotFitStopsTheCatchUpAfterTheOnesBeforeIt() {
        var machine = Machine(revision: 10)
        _ = machine.start()
        _ = machine.outboxRead([])
        let failure = SeedError(.invalidData, "events[3] does not fit")
        let answered = machine.answered(
            kept: [:], hasMore: true, hadChangeSets: true, holdsEnough: false, failure: failure)
        #expect(answered.name == "apply(stopReading: true)", "what came before it is applied, nothing more read")
        #expect(machine.applied().name == "stop(events[3] does not fit)")
    }
}

extension CatchUpMachine.Step {
    /// The step, spelled for a comparison.
    var name: String {
        switch self {
        case .readOutbox(let limit): "readOutbox(\(limit))"
        case .request(let entries): "request(\(entries))"
        case .apply(let stopReading): "apply(stopReading: \(stopReading))"
        case .recover(let minRevision): "recover(\(minRevision.map(String.init) ?? "nil"))"
        case .rebuild: "rebuild"
        case .drop(let entry, _): "drop(\(entry))"
        case .fail(let error): "fail(\(error.code))"
        case .stop(let failure): "stop(\(failure))"
        case .finish: "finish"
        }
    }
}
