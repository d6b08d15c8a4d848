import NIOConcurrencyHelpers
import SeedSyncModel
import SeedSyncStore
import Testing

/// Requests share reads, but none gets a read that began before it asked. The reads here wait
/// for the test to release them, so nothing depends on timing.
@Suite(.needsPostgres, .tags(.postgres)) struct SharedReadsTests {
    /// Reads numbered in the order they start (1 first), each held until the test releases it.
    private final class Reads: Sendable {
        let started = NIOLockedValueBox(0)
        private let released = NIOLockedValueBox(0)

        /// Read `number`, returned (or thrown) once released; fails when its task is cancelled.
        func read(failing: Bool = false) async throws -> Int {
            let number = started.withLockedValue {
                $0 += 1
                return $0
            }
            while released.withLockedValue({ $0 }) < number {
                try await Task.sleep(for: .milliseconds(1))
            }
            if failing { throw ReadFailure(number: number) }
            return number
        }

        func release(through number: Int) {
            released.withLockedValue { $0 = number }
        }
    }

    private struct ReadFailure: Error, Equatable {
        var number: Int
    }

    /// Waits (10 s at most) until `condition` holds.
    private func waitUntil(_ what: Comment, _ condition: () -> Bool) async throws {
        for _ in 0..<10_000 where !condition() {
            try await Task.sleep(for: .milliseconds(1))
        }
        #expect(condition(), what)
    }

    @Test func aCrowdArrivingDuringAReadSharesTheNextOne() async throws {
        let reads = Reads()
        let shared = SharedReads<Int, Int>()
        async let first = shared.value(for: 0) { try await reads.read() }
        try await waitUntil("the first read starts") { reads.started.withLockedValue { $0 } == 1 }
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<50 {
                group.addTask { try await shared.value(for: 0) { try await reads.read() } }
            }
            try await waitUntil("50 callers wait") { shared.waiters(for: 0) == 50 }
            reads.release(through: 1)
            // The crowd asked while read 1 ran: it must get read 2, not read 1.
            try await waitUntil("the second read starts") { reads.started.withLockedValue { $0 } == 2 }
            reads.release(through: 2)
            for try await number in group { #expect(number == 2) }
        }
        #expect(try await first == 1)
        #expect(reads.started.withLockedValue { $0 } == 2)
        #expect(
            try await shared.value(for: 0) {
                reads.release(through: 3)
                return try await reads.read()
            } == 3)
    }

    @Test func readsOfDifferentKeysRunTogether() async throws {
        let reads = Reads()
        let shared = SharedReads<Int, Int>()
        async let first = shared.value(for: 1) { try await reads.read() }
        async let second = shared.value(for: 2) { try await reads.read() }
        try await waitUntil("both reads start") { reads.started.withLockedValue { $0 } == 2 }
        reads.release(through: 2)
        #expect(Set([try await first, try await second]) == [1, 2])
    }

    @Test func aFailedReadFailsItsSharersAndTheNextReadIsTried() async throws {
        let reads = Reads()
        let shared = SharedReads<Int, Int>()
        async let running = shared.value(for: 0) { try await reads.read() }
        try await waitUntil("the first read starts") { reads.started.withLockedValue { $0 } == 1 }
        let failing = (0..<2).map { _ in Task { try await shared.value(for: 0) { try await reads.read(failing: true) } }
        }
        try await waitUntil("two callers wait") { shared.waiters(for: 0) == 2 }
        reads.release(through: 2)
        #expect(try await running == 1)
        for task in failing {
            await #expect(throws: ReadFailure(number: 2)) { try await task.value }
        }
        reads.release(through: 3)
        #expect(try await shared.value(for: 0) { try await reads.read() } == 3)
    }

    @Test func aCancelledCallerDoesNotCancelTheReadOthersShare() async throws {
        let reads = Reads()
        let shared = SharedReads<Int, Int>()
        async let running = shared.value(for: 0) { try await reads.read() }
        try await waitUntil("the first read starts") { reads.started.withLockedValue { $0 } == 1 }
        let reader = Task { try await shared.value(for: 0) { try await reads.read() } }
        try await waitUntil("the next reader waits") { shared.waiters(for: 0) == 1 }
        let sharer = Task { try await shared.value(for: 0) { try await reads.read() } }
        try await waitUntil("its sharer waits") { shared.waiters(for: 0) == 2 }
        reads.release(through: 1)
        try await waitUntil("the second read starts") { reads.started.withLockedValue { $0 } == 2 }
        reader.cancel()
        try await Task.sleep(for: .milliseconds(20))
        reads.release(through: 2)
        #expect(try await running == 1)
        #expect(try await sharer.value == 2)
        #expect(try await reader.value == 2)
    }
}
