import Foundation
import PostgresNIO
import _ConnectionPoolModule
import SeedSyncModel

extension PostgresSyncStore {
    /// Runs `body` on a pooled connection, with PostgreSQL's errors in the store's terms: a lost
    /// or refused connection is `storeUnavailable` (503, the client retries), a missing table or
    /// column `schemaMismatch`.
    func withConnection<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        do {
            return try await client.withConnection(body)
        } catch let error as PSQLError {
            throw describe(error)
        } catch let error as ConnectionPoolError where error == .connectionCreationCircuitBreakerTripped {
            // The pool could not open a connection: PostgreSQL is down or restarting.
            throw SyncStoreError.storeUnavailable("PostgreSQL at \(location) cannot be reached")
        }
    }

    /// Runs `body` in a transaction (READ COMMITTED), committed when it returns, rolled back when
    /// it throws.
    func withTransaction<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        let logger = self.logger
        return try await withConnection { connection in
            try await connection.query("BEGIN", logger: logger)
            let result: T
            do {
                result = try await body(connection)
            } catch {
                _ = try? await connection.query("ROLLBACK", logger: logger)
                throw error
            }
            try await connection.query("COMMIT", logger: logger)
            return result
        }
    }

    /// Runs one statement and returns its rows, collected.
    func query(_ sql: String, _ binds: PostgresBindings = PostgresBindings(), on connection: PostgresConnection) async throws -> [PostgresRow] {
        var rows: [PostgresRow] = []
        for try await row in try await connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger) {
            rows.append(row)
        }
        return rows
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
        default:
            return PostgresStoreError.connection(error, location: location)
        }
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

    /// Binds a normalized wire value for a column of `type`: timestamps as text (the SQL casts
    /// them), blobs as bytes.
    mutating func append(_ value: JSONValue, as type: FieldType) {
        switch (value, type) {
        case (.null, _): appendNull()
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
