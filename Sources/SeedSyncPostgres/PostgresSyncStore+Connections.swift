import Foundation
import NIOConcurrencyHelpers
package import PostgresNIO
import SeedSyncModel
import _ConnectionPoolModule

extension PostgresSyncStore {
    /// Runs `body` on a pooled connection, with PostgreSQL's errors in the store's terms: a lost
    /// or refused connection is `storeUnavailable` (503, the client retries), a missing table or
    /// column `schemaMismatch`.
    ///
    /// While PostgreSQL is down the pool keeps retrying to connect and a lease would wait for it:
    /// a lease that takes longer than ``leaseTimeout`` fails as `storeUnavailable` instead, so a
    /// request is answered within seconds, not minutes.
    package func withConnection<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T)
        async throws
        -> T
    {
        do {
            return try await withLeaseTimeout(body)
        } catch let error as PSQLError {
            throw describe(error)
        } catch is ClosedConnection {
            throw SyncStoreError.storeUnavailable("the connection to PostgreSQL at \(location) closed")
        } catch let error as ConnectionPoolError where error == .connectionCreationCircuitBreakerTripped {
            // The pool could not open a connection: PostgreSQL is down or restarting.
            throw SyncStoreError.storeUnavailable("PostgreSQL at \(location) cannot be reached")
        }
    }

    private func withLeaseTimeout<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T)
        async throws -> T
    {
        let client = self.client
        let leased = OnceFlag()
        let timeout = leaseTimeout
        let location = self.location
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                try await client.withConnection { connection in
                    leased.set()
                    return try await body(connection)
                }
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                guard leased.isSet else {
                    throw SyncStoreError.storeUnavailable(
                        "no connection to PostgreSQL at \(location) within \(timeout.components.seconds) s")
                }
                return nil
            }
            defer { group.cancelAll() }
            while let result = try await group.next() {
                if let result { return result }
            }
            throw CancellationError()
        }
    }

    /// Runs `body`, statements that need `table`'s lock: a lock another session held past the lock
    /// timeout (SQLSTATE 55P03) fails as `storeUnavailable` naming the table, and for as long again
    /// after it, requests for the table fail so at once, without taking a connection
    /// (``LockedTables``): a table locked for minutes does not starve the pool, so requests for
    /// the other tables and the change log are served meanwhile.
    func lockTimeout<T>(of table: PostgresTableSQL, _ body: () async throws -> T) async throws -> T {
        let name = "\(tableSchema).\(table.type.name)"
        try lockedTables.check(table.type.name, name: name)
        do {
            return try await body()
        } catch let error as PSQLError where error.sqlState == "55P03" {
            lockedTables.mark(table.type.name)
            throw LockedTables.unavailable(name)
        }
    }

    /// Runs `body` in a transaction (READ COMMITTED), committed when it returns, rolled back when
    /// it throws. Its statements wait for locks at most ``PostgresLocation/storeLockTimeout``
    /// (writes then lock their tables with ``PostgresLocation/lockTimeout``, see `write`).
    package func withTransaction<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T)
        async throws
        -> T
    {
        let logger = self.logger
        return try await withConnection { connection in
            try await connection.rows("BEGIN ISOLATION LEVEL READ COMMITTED", logger: logger)
            try await connection.rows(
                PostgresQuery(
                    unsafeSQL:
                        "SET LOCAL lock_timeout = '\(PostgresLocation.storeLockTimeout.components.seconds)s'"),
                logger: logger)
            let result: T
            do {
                result = try await body(connection)
            } catch {
                _ = try? await connection.rows("ROLLBACK", logger: logger)
                throw error
            }
            try await connection.rows("COMMIT", logger: logger)
            return result
        }
    }

    /// Runs one statement and returns its rows, collected.
    package func query(_ sql: String, _ binds: PostgresBindings = PostgresBindings(), on connection: PostgresConnection)
        async throws -> [PostgresRow]
    {
        try await connection.rows(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger)
    }

    func describe(_ error: PSQLError) -> any Error {
        if error.isConnectionFailure {
            return SyncStoreError.storeUnavailable("PostgreSQL at \(location) cannot be reached")
        }
        if let refusal = PostgresStoreError.refusal(error) {
            return PostgresStoreError(.refused, "PostgreSQL refused the write: \(refusal)")
        }
        switch error.sqlState {
        case "42703", "42P01", "42804", "42883":
            return SyncStoreError.schemaMismatch("\(error.serverMessage ?? "a table changed") in \(location)")
        case "42P10":
            // ON CONFLICT (key) without a unique index on the key: the primary key was dropped.
            return SyncStoreError.schemaMismatch(
                "a served table of \(location) lost its primary key on the key column; add it again (ALTER TABLE … ADD PRIMARY KEY (…))"
            )
        case "55P03":
            return SyncStoreError.storeUnavailable(
                "a lock in \(location) was held by another session for too long (an ALTER TABLE, a LOCK TABLE, seed-server schema upgrade or load, or a long transaction writing served tables)"
            )
        default:
            return PostgresStoreError.connection(error, location: location)
        }
    }
}

extension PostgresConnection {
    /// Runs one statement and returns its rows, collected: every statement of the store goes
    /// through here.
    ///
    /// postgres-nio 1.33 loses a statement sent on a connection that has just closed: the
    /// statement reaches a channel whose handlers are gone and its promise is never completed, so
    /// the caller, its HTTP request and the server's shutdown would wait forever (seen when
    /// PostgreSQL crashes under load, on the `ROLLBACK` after a failed statement and on a pooled
    /// connection lent as it closed). So the statement is sent from the connection's event loop,
    /// after checking there that the connection is open: on its loop no close can come in
    /// between, and a close that comes later fails the statement as it should.
    ///
    /// - Throws: `ClosedConnection` when the connection had closed; `PSQLError` otherwise.
    @discardableResult
    package func rows(_ query: PostgresQuery, logger: Logger) async throws -> [PostgresRow] {
        try await eventLoop.flatSubmit {
            guard !self.isClosed else { return self.eventLoop.makeFailedFuture(ClosedConnection()) }
            return self.query(query, logger: logger).map(\.rows)
        }.get()
    }
}

/// A statement was not sent because its connection had closed: PostgreSQL went away (a restart,
/// a crash, the network). The store's callers see it as `storeUnavailable` or `unreachable`.
package struct ClosedConnection: Error, CustomStringConvertible {
    package var description: String { "the connection to PostgreSQL closed" }
}

extension [PostgresRow] {
    /// Each row decoded as `types`, such as `(Int64, String).self`.
    func decode<each Column: PostgresDecodable>(_ types: (repeat each Column).Type) throws -> [(repeat each Column)] {
        try map { try $0.decode(types) }
    }
}

extension PostgresBindings {
    /// Bindings holding `key`, an integer or a text key.
    init(key: JSONValue) {
        self.init()
        append(key: key)
    }

    mutating func append(key: JSONValue) {
        switch key {
        case .int(let number): append(number)
        case .string(let text): append(text)
        default: appendNull()
        }
    }

    /// Binds scope values (integers or texts, as `ScopeGrant.sortedValues(as:)` gives them) as one
    /// array, `bigint[]` or `text[]`, for `PostgresTableSQL.scopeIsGranted(_:in:)`.
    mutating func append(scopeValues values: [JSONValue], as type: KeyType) {
        switch type {
        case .integer: append(values.compactMap { if case .int(let value) = $0 { value } else { nil } })
        case .text: append(values.compactMap { if case .string(let value) = $0 { value } else { nil } })
        }
    }

    /// Binds a normalized wire value for a column of `type`: timestamps and JSON as text (the SQL
    /// casts them), blobs as bytes.
    mutating func append(_ value: JSONValue, as type: FieldType) {
        switch (value, type) {
        case (.null, _): appendNull()
        case (_, .json): append(String(decoding: JSONWriter.bytes(of: value), as: UTF8.self))
        case (.bool(let flag), _): append(flag)
        case (.int(let number), .real): append(Double(number))
        case (.int(let number), _): append(number)
        case (.double(let number), _): append(number)
        case (.string(let text), .blob): append(ByteBuffer(bytes: Data(base64Encoded: text) ?? Data()))
        case (.string(let text), _): append(text)
        case (.array, _), (.object, _): appendNull()
        }
    }
}

/// The key of a row as the wire has it, from the text PostgreSQL gave (`key::text`).
func wireKey(_ text: String, of type: KeyType) -> JSONValue {
    type == .integer ? Int64(text).map(JSONValue.int) ?? .string(text) : .string(text)
}

/// The served tables that a statement found locked by another session lately: requests for one
/// fail at once for ``window`` after that, then the next tries again.
package final class LockedTables: Sendable {
    private let until = NIOLockedValueBox([String: ContinuousClock.Instant]())
    /// How long requests for a table fail at once after a statement on it timed out on its lock:
    /// the lock timeout again (a lock held that long is likely held longer). Requests that were
    /// already waiting for a connection meet the mark once they have one, and a crowd of them must
    /// all pass within the window on a loaded machine: one second was seen too short.
    package static let window = PostgresLocation.lockTimeout

    package init() {}

    /// The entry of `GET /v1/schema`'s row counts, which read every table.
    static let counts = "*counts"

    func isMarked(_ type: String) -> Bool {
        until.withLockedValue { until in until[type].map { $0 > .now } ?? false }
    }

    func mark(_ type: String) {
        until.withLockedValue { $0[type] = .now + Self.window }
    }

    /// - Throws: `storeUnavailable` when `type` timed out on its lock within the window.
    func check(_ type: String, name: String) throws(SyncStoreError) {
        if isMarked(type) { throw Self.unavailable(name) }
    }

    static func unavailable(_ table: String) -> SyncStoreError {
        .storeUnavailable(
            "\(table) is locked by another session (an ALTER TABLE, a LOCK TABLE, or a long transaction) for more than \(PostgresLocation.lockTimeout.components.seconds) s"
        )
    }
}

/// A flag set once and never cleared: that a pooled connection was lent (from then on the lease
/// timeout no longer applies), that the revision watch's `LISTEN` took effect.
package final class OnceFlag: Sendable {
    private let value = NIOLockedValueBox(false)
    package init() {}
    package func set() { value.withLockedValue { $0 = true } }
    package var isSet: Bool { value.withLockedValue { $0 } }
}
