import Foundation
import NIOConcurrencyHelpers
import PostgresNIO
import SeedSyncModel
import SeedSyncPostgres
import SeedSyncTesting
import Testing

/// A connection PostgreSQL closes in the middle of a transaction (a crash of its backend, a
/// restart): the statements after it and the `ROLLBACK` fail at once as `storeUnavailable`, and
/// the request is answered. postgres-nio 1.33 on its own loses a statement sent on a closed
/// connection and waits forever (found by the soak: a request that never ended and a server
/// that ignored SIGTERM).
@Suite(.needsPostgres, .tags(.postgres)) struct ClosedConnectionTests {
    @Test func aTransactionWhoseConnectionClosesFailsAtOnce() async throws {
        try await TestPostgres.withDatabase { location in
            try await PostgresSyncStore.create(at: location, schema: Fixtures.catalogSchema)
            try await TestPostgres.withStore(at: location) { store in
                let error = try await Self.failure(within: .seconds(20)) {
                    try await store.withTransaction { connection in
                        let pid = try await store.query("SELECT pg_backend_pid()", on: connection)[0].decode(Int32.self)
                        try await TestPostgres.run("SELECT pg_terminate_backend(\(pid))", on: location)
                        while !connection.isClosed { try await Task.sleep(for: .milliseconds(10)) }
                        _ = try await store.query("SELECT 1", on: connection)
                    }
                }
                #expect((error as? SyncStoreError)?.code == .storeUnavailable, "\(error)")
                #expect(try await store.revisions().revision == 0, "the pool serves again")
            }
        }
    }

    /// A statement on a connection that has closed throws `ClosedConnection`, without waiting.
    @Test func aStatementOnAClosedConnectionThrows() async throws {
        let location = try TestPostgres.location()
        let connection = try await PostgresConnection.connect(
            configuration: location.connectionConfiguration(), id: 1, logger: Logger(label: "test"))
        try await connection.close()
        let error = try await Self.failure(within: .seconds(20)) {
            try await connection.rows("SELECT 1", logger: Logger(label: "test"))
        }
        #expect(error is ClosedConnection)
    }

    /// The revision watch's `LISTEN` runs until its connection closes even when postgres-nio lost
    /// it (a wait that neither ends nor answers cancellation), and until it is cancelled.
    @Test func aWaitThatNeverEndsStopsWhenItsConnectionCloses() async throws {
        let location = try TestPostgres.location()
        let connection = try await PostgresConnection.connect(
            configuration: location.connectionConfiguration(), id: 1, logger: Logger(label: "test"))
        let lost = LostWait()
        defer { lost.end() }
        let outcome = try await Self.outcome(within: .seconds(1)) {
            try await PostgresSyncStore.untilClosed(connection) { await lost.wait() }
        }
        #expect(outcome == nil, "still waiting while the connection is open")
        try await connection.close()
        let error = try await Self.failure(within: .seconds(20)) {
            try await PostgresSyncStore.untilClosed(connection) { await lost.wait() }
        }
        #expect(error is ClosedConnection)
    }

    @Test func aWaitThatNeverEndsStopsWhenCancelled() async throws {
        let location = try TestPostgres.location()
        let connection = try await PostgresConnection.connect(
            configuration: location.connectionConfiguration(), id: 1, logger: Logger(label: "test"))
        let lost = LostWait()
        defer { lost.end() }
        let watch = Task { try await PostgresSyncStore.untilClosed(connection) { await lost.wait() } }
        try await Task.sleep(for: .milliseconds(200))
        watch.cancel()
        let error = try await Self.failure(within: .seconds(20)) { try await watch.value }
        #expect(error is CancellationError)
        try await connection.close()
    }

    /// A body that does answer cancellation (a `LISTEN` postgres-nio did not lose) is cancelled when
    /// its connection closes, not left running.
    @Test func theBodyIsCancelledWhenItsConnectionCloses() async throws {
        let location = try TestPostgres.location()
        let connection = try await PostgresConnection.connect(
            configuration: location.connectionConfiguration(), id: 1, logger: Logger(label: "test"))
        let cancelled = OnceFlag()
        let watch = Task {
            try await PostgresSyncStore.untilClosed(connection) {
                do { try await Task.sleep(for: .seconds(3600)) } catch { cancelled.set() }
            }
        }
        try await Task.sleep(for: .milliseconds(200))
        try await connection.close()
        let error = try await Self.failure(within: .seconds(20)) { try await watch.value }
        #expect(error is ClosedConnection)
        for _ in 0..<1000 where !cancelled.isSet { try await Task.sleep(for: .milliseconds(20)) }
        #expect(cancelled.isSet, "the body was cancelled")
    }

    /// The error `body` threw within `limit`; an issue is recorded when it returned or still runs.
    static func failure<T: Sendable>(within limit: Duration, _ body: @escaping @Sendable () async throws -> T)
        async throws -> (any Error)?
    {
        let outcome = try await outcome(within: limit, body)
        guard case .failure(let error) = outcome else {
            Issue.record("no error within \(limit): \(String(describing: outcome))")
            return nil
        }
        return error
    }

    /// What `body` gave within `limit`, or nil when it is still running (it is then left behind:
    /// a statement postgres-nio lost cannot be cancelled).
    static func outcome<T: Sendable>(within limit: Duration, _ body: @escaping @Sendable () async throws -> T)
        async throws -> Result<T, any Error>?
    {
        let box = NIOLockedValueBox<Result<T, any Error>?>(nil)
        Task {
            let value: Result<T, any Error>
            do { value = .success(try await body()) } catch { value = .failure(error) }
            box.withLockedValue { $0 = value }
        }
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if let value = box.withLockedValue({ $0 }) { return value }
            try await Task.sleep(for: .milliseconds(20))
        }
        return nil
    }
}

/// A wait that ignores cancellation, as a `LISTEN` postgres-nio lost does, ended by the test.
final class LostWait: Sendable {
    private let continuations = NIOLockedValueBox<[CheckedContinuation<Void, Never>]>([])

    func wait() async {
        await withCheckedContinuation { continuation in continuations.withLockedValue { $0.append(continuation) } }
    }

    func end() {
        for continuation in continuations.withLockedValue({ list in
            defer { list = [] }
            return list
        }) {
            continuation.resume()
        }
    }
}
