import NIOConcurrencyHelpers
import SeedSyncClient
import Testing

/// `PrefetchingSequence`: how far ahead it fetches, the order of what it gives, and how it ends.
@Suite struct PrefetchingTests {
    /// Elements 0, 10, …, 90, fetched from cursors 0 to 9; the cursors fetched are recorded.
    static func tens(
        ahead: Int, failingAt failure: Int? = nil, started: NIOLockedValueBox<[Int]>
    ) -> PrefetchingSequence<Int, Int> {
        PrefetchingSequence(from: 0, ahead: ahead) { cursor in
            started.withLockedValue { $0.append(cursor) }
            if cursor == failure { throw CancellationError() }
            return (cursor * 10, cursor < 9 ? cursor + 1 : nil)
        }
    }

    /// Waits (up to 5 s) until `started` holds `count` cursors.
    static func wait(for count: Int, in started: NIOLockedValueBox<[Int]>) async throws {
        for _ in 0..<2_500 where started.withLockedValue({ $0.count }) < count {
            try await Task.sleep(for: .milliseconds(2))
        }
    }

    @Test(arguments: [1, 3])
    func theNextElementsAreFetchedAheadAndNoMore(ahead: Int) async throws {
        let started = NIOLockedValueBox<[Int]>([])
        var elements = Self.tens(ahead: ahead, started: started).makeAsyncIterator()
        try await Self.wait(for: ahead, in: started)
        #expect(started.withLockedValue { $0 } == Array(0..<ahead))
        var seen: [Int] = []
        while let element = try await elements.next() {
            seen.append(element)
            // The next `ahead` are under way (or all that are left), never more.
            let wanted = min(seen.count + ahead, 10)
            try await Self.wait(for: wanted, in: started)
            #expect(started.withLockedValue { $0 } == Array(0..<wanted))
        }
        #expect(seen == (0..<10).map { $0 * 10 })
        #expect(try await elements.next() == nil)
    }

    /// Elements of weight 5 with a budget of 12: three wait at most (the third crosses it), not ten.
    @Test func aWeighedSequenceReadsAheadByWeight() async throws {
        let started = NIOLockedValueBox<[Int]>([])
        var elements = Self.tens(ahead: 10, started: started).weighing({ _ in 5 }, upTo: 12).makeAsyncIterator()
        try await Self.wait(for: 3, in: started)
        try await Task.sleep(for: .milliseconds(50))
        #expect(started.withLockedValue { $0 } == [0, 1, 2])
        #expect(try await elements.next() == 0)
        try await Self.wait(for: 4, in: started)
        try await Task.sleep(for: .milliseconds(50))
        #expect(started.withLockedValue { $0 } == [0, 1, 2, 3])
    }

    /// Elements that weigh nothing (answers of types the database left out hold no rows) are still
    /// held to `ahead`: four wait, not all ten.
    @Test func weightlessElementsAreHeldToTheCount() async throws {
        let started = NIOLockedValueBox<[Int]>([])
        var elements = Self.tens(ahead: 4, started: started).weighing({ _ in 0 }, upTo: 12).makeAsyncIterator()
        try await Self.wait(for: 4, in: started)
        try await Task.sleep(for: .milliseconds(50))
        #expect(started.withLockedValue { $0 } == [0, 1, 2, 3])
        #expect(try await elements.next() == 0)
        try await Self.wait(for: 5, in: started)
        try await Task.sleep(for: .milliseconds(50))
        #expect(started.withLockedValue { $0 } == [0, 1, 2, 3, 4])
    }

    /// A consumer whose task is cancelled while it waits gets `CancellationError` at once.
    @Test func aCancelledWaitEndsAtOnce() async throws {
        let sequence = PrefetchingSequence<Int, Int>(from: 0) { _ in
            try? await Task.sleep(for: .seconds(30))
            return (0, nil)
        }
        let waiting = Task {
            var elements = sequence.makeAsyncIterator()
            return try await elements.next()
        }
        try await Task.sleep(for: .milliseconds(50))
        let clock = ContinuousClock()
        let started = clock.now
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
        #expect(clock.now - started < .seconds(10))
    }

    @Test func aFailedFetchEndsTheSequenceWithItsErrorAfterTheElementsBefore() async throws {
        let started = NIOLockedValueBox<[Int]>([])
        var elements = Self.tens(ahead: 4, failingAt: 3, started: started).makeAsyncIterator()
        var seen: [Int] = []
        await #expect(throws: CancellationError.self) {
            while let element = try await elements.next() { seen.append(element) }
        }
        #expect(seen == [0, 10, 20])
        // Nothing is fetched past the failure: the requests after it fail the same way.
        #expect(started.withLockedValue { $0 } == [0, 1, 2, 3])
    }

    /// The error is thrown once, then the sequence gives `nil`: whether the failure came while
    /// the caller waited for it or before it asked.
    @Test(arguments: [true, false])
    func anErrorIsThrownOnceThenTheSequenceEnds(callerWaits: Bool) async throws {
        let sequence = PrefetchingSequence<Int, Int>(from: 0) { _ in
            if callerWaits { try await Task.sleep(for: .milliseconds(200)) }
            throw CancellationError()
        }
        var elements = sequence.makeAsyncIterator()
        if !callerWaits { try await Task.sleep(for: .milliseconds(100)) }
        await #expect(throws: CancellationError.self) { try await elements.next() }
        #expect(try await elements.next() == nil)
    }

    @Test func mapRunsWithTheFetchAhead() async throws {
        let started = NIOLockedValueBox<[Int]>([])
        let mapped = NIOLockedValueBox<[Int]>([])
        let sequence = Self.tens(ahead: 2, started: started).map { element in
            mapped.withLockedValue { $0.append(element) }
            return "\(element)"
        }
        var elements = sequence.makeAsyncIterator()
        try await Self.wait(for: 2, in: mapped)
        // Both elements fetched ahead are mapped before the first is asked for.
        #expect(mapped.withLockedValue { $0 } == [0, 10])
        #expect(try await elements.next() == "0")
    }
}
