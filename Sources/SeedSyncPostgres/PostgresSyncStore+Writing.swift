import Logging
import PostgresNIO
public import SeedSyncModel

extension PostgresSyncStore {
    /// Validates `changeSet` and writes it in one transaction; the capture triggers log it as the
    /// transaction's revision, like any other program's write.
    ///
    /// Creates fail on an existing key, updates and deletes on a missing one; every reference a
    /// created or updated row holds must resolve, and no remaining row may reference a deleted
    /// one. Constraints of the table itself (a `varchar` length, a check) are reported as an
    /// invalid change set too. Nothing is written then.
    @discardableResult
    public func commit(_ changeSet: ChangeSet) async throws -> Int64 {
        do {
            return try await withTransaction { [self] connection in
                let changes = try await lockServed(on: connection).schema.validateCommit(changeSet)
                let revision = try await write(changes, on: connection)
                if let problem = try await referenceProblems(of: changes, on: connection).first {
                    throw SyncStoreError.invalidChangeSet(problem.error)
                }
                return revision
            }
        } catch let error as PostgresStoreError where error.code == .refused {
            throw SyncStoreError.invalidChangeSet(ChangeSetError(.refused, error.description))
        } catch let refusal as ForeignKeyRefusal {
            throw refusal.error
        }
    }

    /// Writes the rows, without checking references; the revision the capture gave them.
    ///
    /// The tables are locked first (the lock the writes take anyway), then checked
    /// (``TableHealth``): held until the commit, the lock keeps any DDL from changing them in
    /// between, so a write is never confirmed to a table whose capture is gone.
    ///
    /// - Parameter defaulted: by type, fields whose columns created rows leave to their own
    ///   default (the fields a pushing client's version does not have: a column's default is what
    ///   PostgreSQL gives them, `now()` and sequences included).
    /// - Throws: `SyncStoreError.schemaMismatch` when a table lost its capture or its key,
    ///   `storeUnavailable` when another session holds a lock on one past the lock timeout.
    func write(
        _ changes: [ValidatedChanges], defaulting defaulted: [String: Set<String>] = [:],
        on connection: PostgresConnection
    ) async throws -> Int64 {
        let written = changes.map { tables[$0.type.name]! }
        _ = try await query(
            "SET LOCAL lock_timeout = '\(PostgresLocation.lockTimeout.components.seconds)s'", on: connection)
        for table in written {
            try await lockTimeout(of: table) {
                _ = try await query("LOCK TABLE \(table.table) IN ROW EXCLUSIVE MODE", on: connection)
            }
        }
        for problem in try await TableHealth.problems(
            of: written, tableSchema: tableSchema, on: connection, logger: logger)
        {
            try problem.check()
        }
        for change in changes {
            try await write(change, defaulting: defaulted[change.type.name] ?? [], on: connection)
        }
        // The capture's revision; taken here when no statement changed a row (an empty revision).
        let rows = try await query("SELECT seedsync._revision()", on: connection)
        return try rows[0].decode(Int64.self)
    }

    private func write(_ change: ValidatedChanges, defaulting defaulted: Set<String>, on connection: PostgresConnection)
        async throws
    {
        let table = tables[change.type.name]!
        let insert = table.insert(defaulting: defaulted) + " ON CONFLICT (\(table.key)) DO NOTHING RETURNING 1"
        for row in change.creates {
            guard
                try await run(insert, table.binds(row, skipping: defaulted), row: row.key, of: table, on: connection)
            else {
                throw invalid(
                    .rowExists, "\(change.type.name)[\(row.key.keyString!)] cannot be created: it already exists")
            }
        }
        for row in change.updates {
            guard
                try await run(table.update + " RETURNING 1", table.binds(row), row: row.key, of: table, on: connection)
            else {
                throw invalid(
                    .rowNotFound, "\(change.type.name)[\(row.key.keyString!)] cannot be updated: it does not exist")
            }
        }
        for key in change.deletes {
            guard
                try await run(
                    table.delete + " RETURNING 1", PostgresBindings(key: key), row: key, of: table, on: connection)
            else {
                throw invalid(
                    .rowNotFound, "\(change.type.name)[\(key.keyString!)] cannot be deleted: it does not exist")
            }
        }
        // A deleted key is never given to a pushed row (a client may still hold a reference to it).
        if let largest = change.deletes.compactMap({ if case .int(let key) = $0 { key } else { nil } }).max() {
            var binds = PostgresBindings()
            binds.append(change.type.name)
            binds.append(largest)
            _ = try await query(
                "INSERT INTO seedsync._keys AS k (type, last) VALUES ($1, $2) ON CONFLICT (type) DO UPDATE SET last = greatest(k.last, excluded.last)",
                binds, on: connection
            )
        }
    }

    /// Runs one row's statement; whether it touched a row. A constraint of the table that refuses
    /// the row becomes an invalid change set naming it.
    private func run(
        _ sql: String, _ binds: PostgresBindings, row key: JSONValue, of table: PostgresTableSQL,
        on connection: PostgresConnection
    ) async throws -> Bool {
        do {
            return try await !query(sql, binds, on: connection).isEmpty
        } catch let error as PSQLError {
            guard let refusal = PostgresStoreError.refusal(error) else { throw error }
            let refused = invalid(
                .refused, "\(table.type.name)[\(key.keyString!)] cannot be written: PostgreSQL refused it (\(refusal))")
            if error.sqlState == "23503" {
                throw ForeignKeyRefusal(
                    error: refused, constraint: error.serverInfo?[.constraintName], table: table.table)
            }
            throw refused
        }
    }

    /// The references the written `changes` leave broken: a created or updated row pointing at a
    /// missing row, a deleted row something still points at (its first referrer); between scoped
    /// types, a reference to a row of another scope value, and a referrer left in another value
    /// by a row that moved. A row outside `grant` is one the writer cannot know of: a reference to
    /// it dangles.
    func referenceProblems(
        of changes: [ValidatedChanges], grant: ScopeGrant = .all, on connection: PostgresConnection
    ) async throws -> [ReferenceProblem] {
        var problems: [ReferenceProblem] = []
        for change in changes {
            for (index, field) in change.type.fields.enumerated() {
                guard let target = field.references, let targetTable = tables[target] else { continue }
                let bothScoped = change.type.isScoped && targetTable.type.isScoped
                for row in change.creates + change.updates where row.values[index] != .null {
                    let key = row.values[index]
                    let sql = bothScoped ? targetTable.scopeOfRow : targetTable.exists
                    guard let found = try await query(sql, PostgresBindings(key: key), on: connection).first else {
                        problems.append(
                            .dangling(
                                type: change.type.name, key: row.key, field: field.name, target: target, targetKey: key)
                        )
                        continue
                    }
                    guard bothScoped, let own = change.type.scopeValue(key: row.key, values: row.values),
                        let theirs = try found.decode(String?.self), theirs != own.keyString
                    else { continue }
                    problems.append(
                        grant.includes(.string(theirs))
                            ? .crossScope(
                                type: change.type.name, key: row.key, field: field.name, target: target, targetKey: key)
                            : .dangling(
                                type: change.type.name, key: row.key, field: field.name, target: target, targetKey: key)
                    )
                }
            }
        }
        return problems + (try await referrers(ofDeletesIn: changes, on: connection))
            + (try await referrersLeftBehind(by: changes, on: connection))
    }

    /// For each updated row of a scoped type, its first referrer of another scope value: a row
    /// that moved to another value takes the rows that reference it along, or the reference
    /// would cross from one value to another.
    private func referrersLeftBehind(by changes: [ValidatedChanges], on connection: PostgresConnection) async throws
        -> [ReferenceProblem]
    {
        var problems: [ReferenceProblem] = []
        for change in changes where change.type.isScoped && !change.updates.isEmpty {
            for (referrer, field) in schema.references(to: change.type.name) where referrer.isScoped {
                let sql = tables[referrer.name]!.referrerOfOtherScope(through: field)
                for row in change.updates {
                    guard let scope = change.type.scopeValue(key: row.key, values: row.values)?.keyString else {
                        continue
                    }
                    var binds = PostgresBindings(key: row.key)
                    binds.append(scope)
                    guard let holder = try await query(sql, binds, on: connection).first else { continue }
                    problems.append(
                        .crossScope(
                            type: referrer.name,
                            key: wireKey(try holder.decode(String.self), of: referrer.primaryKey.type),
                            field: field.name, target: change.type.name, targetKey: row.key))
                }
            }
        }
        return problems
    }

    /// For each row `changes` delete that some row points at, its first referrer per reference
    /// field: after the write, a broken reference; when the delete conflicts, rows the answer holds.
    func referrers(ofDeletesIn changes: [ValidatedChanges], on connection: PostgresConnection) async throws
        -> [ReferenceProblem]
    {
        var problems: [ReferenceProblem] = []
        for change in changes where !change.deletes.isEmpty {
            for (referrer, field) in schema.references(to: change.type.name) {
                let sql = tables[referrer.name]!.referrer(through: field)
                for key in change.deletes {
                    if let holder = try await query(sql, PostgresBindings(key: key), on: connection).first {
                        let holderKey = wireKey(try holder.decode(String.self), of: referrer.primaryKey.type)
                        problems.append(
                            .referenced(
                                type: change.type.name, key: key, referrer: referrer.name, referrerKey: holderKey,
                                field: field.name))
                    }
                }
            }
        }
        return problems
    }

    private func invalid(_ code: ChangeSetError.Code, _ message: String) -> SyncStoreError {
        .invalidChangeSet(ChangeSetError(code, message))
    }
}

extension PostgresTableSQL {
    /// Key, then fields, as ``insert`` and ``update`` bind them; without the `skipped` fields, as
    /// ``insert(defaulting:)`` binds them.
    func binds(_ row: RowValues, skipping skipped: Set<String> = []) -> PostgresBindings {
        var binds = PostgresBindings(key: row.key)
        for (field, value) in zip(type.fields, row.values) where !skipped.contains(field.name) {
            binds.append(value, as: field.type)
        }
        return binds
    }
}

extension PostgresStoreError {
    /// What a table's own constraint said about a row it refused (SQLSTATE classes 22 and 23),
    /// from messages that name columns and constraints but no values; `nil` for other errors.
    static func refusal(_ error: PSQLError) -> String? {
        guard let state = error.sqlState, state.hasPrefix("22") || state.hasPrefix("23") else { return nil }
        let safe: Set<String> = ["22001", "22003", "23502", "23503", "23505", "23514"]
        if safe.contains(state), let message = error.serverMessage { return "\(message), SQLSTATE \(state)" }
        return "SQLSTATE \(state)"
    }
}

/// A foreign key of the table itself (not deferrable, on an attached table) refused a row: an
/// invalid change set for a commit; for a push, a conflict when it points at a served table
/// (someone else broke the reference), a rejection naming it when it points at a table the
/// client cannot see.
struct ForeignKeyRefusal: Error {
    let error: SyncStoreError
    /// The constraint PostgreSQL named, and the table it is on.
    let constraint: String?
    let table: String

    /// Whether the constraint points at one of `tables` (qualified names, as `PostgresTableSQL`
    /// has them); `false` when it cannot be read.
    func pointsAt(any tables: [String], on connection: PostgresConnection, logger: Logger) async throws -> Bool {
        guard let constraint else { return false }
        var binds = PostgresBindings()
        binds.append(constraint)
        binds.append(table)
        binds.append(tables)
        let rows = try await connection.rows(
            PostgresQuery(
                unsafeSQL: """
                    SELECT confrelid IN (SELECT to_regclass(n) FROM unnest($3::text[]) n) FROM pg_constraint
                    WHERE conname = $1 AND conrelid = to_regclass($2) AND contype = 'f'
                    """,
                binds: binds), logger: logger)
        return try rows.first?.decode(Bool.self) ?? false
    }
}
