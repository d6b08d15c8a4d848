import Foundation
import GRDB
public import SeedSyncModel
import SeedSyncSQL
import SeedSyncStore

extension SQLiteSyncStore {
    /// Applies a pushed change set once (see `SyncStore/push(_:retention:)`), in one write
    /// transaction with its idempotency record in `_seedsync_pushes`.
    public func push(_ changeSet: PushedChangeSet, retention: Duration, version: Int?, grant: ScopeGrant) async throws
        -> PushResult
    {
        let now = Date()
        let result = try await writeTransaction { db in
            let served = try self.served(db)
            let writer = PushWriter(served, projection: try served.versions.projection(version), grant: grant)
            return try writer.push(changeSet, at: now, retention: retention, in: db)
        }
        if case .applied(let revision, _) = result.status { watches.publish(revision) }
        return result
    }
}

/// One push inside a write transaction: the recorded result when the id was seen, else the
/// revisions checked, keys assigned, rows written and references checked (in a savepoint, rolled
/// back on a conflict or rejection), then the result recorded.
///
/// A row of a scoped type outside the pusher's grant is, to the push, a row that does not exist:
/// the push reads it as missing (an update or delete of it conflicts, the answer shows it gone; a
/// reference to it dangles), so no answer tells one scope's rows from absent ones. A row the push
/// would write into a value outside the grant is rejected (`outsideScope`).
struct PushWriter {
    let served: ServedTables
    /// The pusher's schema version: what the push is read in and its conflicts answered in.
    let projection: VersionProjection
    /// The scope values the pusher may read and write.
    let grant: ScopeGrant

    init(_ served: ServedTables, projection: VersionProjection, grant: ScopeGrant) {
        self.served = served
        self.projection = projection
        // A dataset without a scope has shared rows alone: every grant writes them all.
        self.grant = served.schema.scope == nil ? .all : grant
    }

    var schema: DatasetSchema { served.schema }
    var tables: [String: TableSQL] { served.tables }

    /// The idempotency records: the first result of every change set id, kept for the retention.
    static let createRecords = """
        CREATE TABLE IF NOT EXISTS _seedsync_pushes (
          id TEXT PRIMARY KEY NOT NULL,
          result BLOB NOT NULL,
          pushed_at REAL NOT NULL
        );
        CREATE INDEX IF NOT EXISTS _seedsync_pushes_pushed_at ON _seedsync_pushes (pushed_at);
        CREATE TABLE IF NOT EXISTS _seedsync_keys (
          type TEXT PRIMARY KEY NOT NULL,
          last INTEGER NOT NULL
        );
        """

    func push(_ pushed: PushedChangeSet, at now: Date, retention: Duration, in db: Database) throws -> PushResult {
        let cutoff = now.timeIntervalSince1970 - Double(retention.components.seconds)
        try db.execute(sql: "DELETE FROM _seedsync_pushes WHERE pushed_at < ?", arguments: [cutoff])
        if let recorded = try Data.fetchOne(
            db, sql: "SELECT result FROM _seedsync_pushes WHERE id = ?", arguments: [pushed.id])
        {
            return try PushRecord.answer(recorded, id: pushed.id, grant: grant)
        }
        let result = PushResult(id: pushed.id, status: try apply(pushed, in: db))
        try db.execute(
            sql: "INSERT INTO _seedsync_pushes (id, result, pushed_at) VALUES (?, ?, ?)",
            arguments: [pushed.id, Data(PushRecord.encode(result, grant: grant)), now.timeIntervalSince1970]
        )
        return result
    }

    private func apply(_ pushed: PushedChangeSet, in db: Database) throws -> PushResult.Status {
        let push: ValidatedPush
        do {
            push = try schema.validatePush(projection.newest(pushed) { type, key in try storedRow(type, key, in: db) })
        } catch let error as ChangeSetError {
            return .rejected(code: SyncStoreError.Code.invalidChangeSet.rawValue, message: error.description)
        }
        if let error = push.outsideScopeError(grant, scope: schema.scope) {
            return .rejected(code: SyncStoreError.Code.invalidChangeSet.rawValue, message: error.description)
        }
        if try hasConflict(push, in: db) {
            // A delete refused for its stale revision keeps the row, and so the rows that reference it.
            let kept = try ChangeWriter(served, grant: grant).referrers(ofDeletesIn: push.changes, in: db)
            return .conflict(try conflictRows(push, related: try shown(kept, in: db), in: db))
        }
        var keys: [String: [Int64: Int64]] = [:]
        do {
            for (type, temporary) in push.temporaryKeys {
                keys[type] = Dictionary(
                    uniqueKeysWithValues: zip(temporary, try newKeys(type, count: temporary.count, in: db)))
            }
        } catch let error as ChangeSetError {
            return .rejected(code: SyncStoreError.Code.invalidChangeSet.rawValue, message: error.description)
        }
        let changes = push.resolved(with: keys)
        let writer = ChangeWriter(served, grant: grant)
        var outcome: Result<Int64, SyncStoreError> = .failure(
            .invalidChangeSet(ChangeSetError(.malformed, "not written")))
        var problems: [ReferenceProblem] = []
        try db.inSavepoint {
            do {
                let revision = try writer.write(changes, in: db)
                problems = try writer.referenceProblems(of: changes, in: db)
                outcome = .success(revision)
                return problems.isEmpty ? .commit : .rollback
            } catch let error as SyncStoreError where error.code == .invalidChangeSet {
                outcome = .failure(error)
                return .rollback
            }
        }
        switch outcome {
        case .failure(let error): return .rejected(code: error.code.rawValue, message: error.description)
        case .success where !problems.isEmpty:
            if let own = problems.first(where: { push.causes($0, keys: keys) }) {
                return .rejected(code: SyncStoreError.Code.invalidChangeSet.rawValue, message: own.error.description)
            }
            return .conflict(try conflictRows(push, related: try shown(problems, in: db), in: db))
        case .success(let revision): return .applied(revision: revision, keys: ValidatedPush.keyMap(keys))
        }
    }

    /// `count` keys of `type` no row has or had: after the largest key in use and the largest
    /// ever deleted or given out (`_seedsync_keys`), so a client's reference to a deleted row
    /// never comes to point at a new one.
    ///
    /// - Throws: ``ChangeSetError`` `keysExhausted` when the keys would pass `Int64.max`.
    private func newKeys(_ type: String, count: Int, in db: Database) throws -> [Int64] {
        let largest = try Int64.fetchOne(db, sql: tables[type]!.largestKey) ?? 0
        let mark = try Int64.fetchOne(db, sql: "SELECT last FROM _seedsync_keys WHERE type = ?", arguments: [type]) ?? 0
        let used = max(largest, mark, 0)
        guard Int64.max - used >= Int64(count) else { throw ChangeSetError.keysExhausted(type) }
        let first = used + 1
        let keys = (0..<Int64(count)).map { first + $0 }
        try db.execute(
            sql:
                "INSERT INTO _seedsync_keys (type, last) VALUES (?, ?) ON CONFLICT (type) DO UPDATE SET last = excluded.last",
            arguments: [type, keys.last ?? first - 1]
        )
        return keys
    }

    /// Whether a row the push updates or deletes changed or went since its base revision, or a
    /// text key it creates exists.
    private func hasConflict(_ push: ValidatedPush, in db: Database) throws -> Bool {
        for change in push.changes {
            let table = tables[change.type.name]!
            let bases = push.baseRevisions[change.type.name] ?? [:]
            for key in change.updates.map(\.key) + change.deletes {
                let row = try visibleRow(table, key, in: db)
                guard let row, let base = bases[key.keyString!], row[table.type.fields.count + 1] as Int64 == base
                else { return true }
            }
            if change.type.primaryKey.type == .text {
                for row in change.creates
                where try Bool.fetchOne(
                    db.cachedStatement(sql: table.exists), arguments: [ValueMapping.databaseValue(key: row.key)]) != nil
                {
                    return true
                }
            }
        }
        return false
    }

    /// The stored row `table[key]` (key, fields, revision), or `nil` when there is none the
    /// pusher may see: a row of a scoped type outside its grant is one it cannot know of.
    private func visibleRow(_ table: TableSQL, _ key: JSONValue, in db: Database) throws -> Row? {
        let row = try Row.fetchOne(
            db.cachedStatement(sql: table.row), arguments: [ValueMapping.databaseValue(key: key)])
        guard let row, !grant.isAll, table.type.isScoped else { return row }
        let values = table.type.fields.enumerated().map {
            ValueMapping.jsonValue(row[$0.offset + 1], as: $0.element.type)
        }
        let scope = table.type.scopeValue(key: key, values: values)
        return scope.map(grant.includes) == true ? row : nil
    }

    /// The rows a conflict answer shows for `problems`: a missing or hidden target as gone (the
    /// push named its key), a referrer only when the pusher may see it (its key is not the
    /// pusher's to learn otherwise).
    private func shown(_ problems: [ReferenceProblem], in db: Database) throws -> [(type: String, key: JSONValue)] {
        try problems.compactMap { problem in
            let row = problem.relatedRow
            if case .referenced = problem, try isHidden(tables[row.type]!, row.key, in: db) { return nil }
            return row
        }
    }

    /// Whether `table[key]` exists but lies outside the grant.
    private func isHidden(_ table: TableSQL, _ key: JSONValue, in db: Database) throws -> Bool {
        guard !grant.isAll, try visibleRow(table, key, in: db) == nil else { return false }
        return try Bool.fetchOne(
            db.cachedStatement(sql: table.exists), arguments: [ValueMapping.databaseValue(key: key)])
            != nil
    }

    /// The stored fields of `type[key]` by name, or `nil` when there is no such row.
    private func storedRow(_ type: EntityType, _ key: JSONValue, in db: Database) throws -> [String: JSONValue]? {
        let table = tables[type.name]!
        guard let row = try visibleRow(table, key, in: db) else { return nil }
        return Dictionary(
            uniqueKeysWithValues: type.fields.enumerated().map {
                ($0.element.name, ValueMapping.jsonValue(row[$0.offset + 1], as: $0.element.type))
            })
    }

    /// The conflict answer in the pusher's version: the current state of every row the push
    /// names, and of `related` rows.
    private func conflictRows(_ push: ValidatedPush, related: [(type: String, key: JSONValue)], in db: Database) throws
        -> ChangeSet
    {
        var rows = ConflictRows()
        let named = push.touchedKeys.flatMap { type, keys in keys.map { (type: type, key: $0) } }
        for (type, key) in named + related {
            let table = tables[type]!
            let row = try visibleRow(table, key, in: db)
            rows.add(
                type, key,
                row.map { row in
                    (
                        table.type.fields.enumerated().map {
                            ValueMapping.jsonValue(row[$0.offset + 1], as: $0.element.type)
                        }, row[table.type.fields.count + 1]
                    )
                })
        }
        return try projection.project(rows.changeSet(in: schema))
    }
}
