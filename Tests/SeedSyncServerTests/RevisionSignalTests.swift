import SeedSyncServer
import Testing

/// ``RevisionSignal`` alone: what ends a wait, and what a wait costs the signal.
@Suite struct RevisionSignalTests {
    @Test func aPublishWakesEveryWaiterForAnEarlierRevisionAndNoOther() async throws {
        let signal = RevisionSignal(capacity: 10_000)
        signal.publish(5)
        let deadline = ContinuousClock.now + .seconds(30)
        try await withThrowingTaskGroup(of: (Int64, RevisionSignal.Outcome).self) { group in
            for _ in 0..<1_000 { group.addTask { (5, await signal.wait(after: 5, until: deadline)) } }
            group.addTask { (6, await signal.wait(after: 6, until: .now + .milliseconds(300))) }
            while signal.waiting < 1_001 { try await Task.sleep(for: .milliseconds(5)) }
            signal.publish(4)  // older: wakes nobody
            signal.publish(6)
            var outcomes: [Int64: [RevisionSignal.Outcome]] = [:]
            for try await (after, outcome) in group { outcomes[after, default: []].append(outcome) }
            #expect(outcomes[5] == Array(repeating: .newer, count: 1_000))
            #expect(outcomes[6] == [.timedOut], "a client at the newest revision keeps waiting")
        }
        #expect(signal.waiting == 0)
    }

    @Test func aWaitForAnOlderRevisionOrPastItsDeadlineEndsAtOnce() async {
        let signal = RevisionSignal(capacity: 10)
        signal.publish(9)
        #expect(await signal.wait(after: 8, until: .now + .seconds(60)) == .newer)
        #expect(await signal.wait(after: 9, until: .now - .seconds(1)) == .timedOut)
        #expect(signal.waiting == 0)
    }

    @Test func closingEndsEveryWaitAndEachLaterOne() async throws {
        let signal = RevisionSignal(capacity: 10)
        async let held = signal.wait(after: 0, until: .now + .seconds(60))
        while signal.waiting < 1 { try await Task.sleep(for: .milliseconds(5)) }
        signal.close()
        #expect(await held == .closed)
        #expect(await signal.wait(after: 0, until: .now + .seconds(60)) == .closed)
    }

    @Test func waitsBeyondTheCapacityAreRefusedAndCancelledOnesLeave() async throws {
        let signal = RevisionSignal(capacity: 2)
        let first = Task { await signal.wait(after: 0, until: .now + .seconds(60)) }
        let second = Task { await signal.wait(after: 0, until: .now + .seconds(60)) }
        while signal.waiting < 2 { try await Task.sleep(for: .milliseconds(5)) }
        #expect(await signal.wait(after: 0, until: .now + .seconds(60)) == .full)
        first.cancel()
        #expect(await first.value == .timedOut)
        #expect(signal.waiting == 1, "a cancelled request gives its slot back")
        signal.publish(1)
        #expect(await second.value == .newer)
        #expect(signal.waiting == 0)
    }
}
