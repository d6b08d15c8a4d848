import Foundation
import GRDB
public import SeedSyncModel
import SeedSyncSQL
import SeedSyncStore

extension SQLiteSyncStore {
    @discardableResult
    public func commit(_ changeSet: ChangeSet) async throws -> Int64 {
        do {
            let revision = try await writeTransaction { db in
                let served = try self.served(db)
                let changes = try served.schema.validateCommit(changeSet)
                return try ChangeWriter(served).commit(changes, in: db)
            }
            watches.publish(revision)
            return revision
        } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_FOREIGNKEY {
            throw SyncStoreError.invalidChangeSet(
                ChangeSetError(.brokenReference, "the change set leaves a reference to a missing row"))
        }
    }
}

/// Applies one validated change set inside a write transaction and logs it as the next revision.
///
/// Creates fail on an existing key, updates and deletes on a missing one. After every row is
/// written, each reference a created or updated row holds must resolve, and no remaining row may
/// reference a deleted one. Any failure throws, and the transaction rolls back whole.
struct ChangeWriter {
    let schema: DatasetSchema
    let tables: [String: TableSQL]
    /// The scope values of the writer: a row it references outside them reads as missing.
    let grant: ScopeGrant

    init(_ served: ServedTables, grant: ScopeGrant = .all) {
        schema = served.schema
        tables = served.tables
        self.grant = grant
    }

    func commit(_ changes: [ValidatedChanges], in db: Database) throws -> Int64 {
        let revision = try write(changes, in: db)
        if let problem = try referenceProblems(of: changes, in: db).first {
            throw SyncStoreError.invalidChangeSet(problem.error)
        }
        return revision
    }

    /// Writes the rows and logs them as the next revision, without checking references.
    func write(_ changes: [ValidatedChanges], in db: Database) throws -> Int64 {
        let state = try LogState.fetch(db)
        let revision = state.revision + 1
        var from: [String: [String: JSONValue]] = [:]
        for change in changes {
            from[change.type.name] = try scopesBefore(change, in: db)
            try write(change, revision: revision, in: db)
        }
        let logged = loggedChangeSet(changes, revision: revision, from: from)
        try db.execute(
            sql: "INSERT INTO _seedsync_changes (revision, change_set) VALUES (?, ?)",
            arguments: [revision, Data(logged.jsonBytes())]
        )
        try ScopeIndex.record(logged, schema: schema, in: db)
        try LogState.save(db, revision: revision, minRevision: state.minRevision)
        return revision
    }

    /// The references the written `changes` leave broken: a created or updated row pointing at a
    /// missing row, a deleted row something still points at (its first referrer).
    func referenceProblems(of changes: [ValidatedChanges], in db: Database) throws -> [ReferenceProblem] {
        var problems: [ReferenceProblem] = []
        for change in changes {
            for (index, field) in change.type.fields.enumerated() {
                guard let target = field.references, let targetTable = tables[target] else { continue }
                let bothScoped = change.type.isScoped && targetTable.type.isScoped
                let exists = try db.cachedStatement(sql: bothScoped ? targetTable.scopeOfRow : targetTable.exists)
                for row in change.creates + change.updates where row.values[index] != .null {
                    let key = row.values[index]
                    let found = try DatabaseValue.fetchOne(exists, arguments: [ValueMapping.databaseValue(key: key)])
                    guard let found else {
                        problems.append(
                            .dangling(
                                type: change.type.name, key: row.key, field: field.name, target: target, targetKey: key)
                        )
                        continue
                    }
                    guard bothScoped, let own = change.type.scopeValue(key: row.key, values: row.values) else {
                        continue
                    }
                    let theirs = ValueMapping.jsonValue(found, as: schema.scope?.type.fieldType)
                    guard theirs.keyString != own.keyString else { continue }
                    // A row outside the writer's grant is one it cannot know of: it reads as missing.
                    problems.append(
                        grant.includes(theirs)
                            ? .crossScope(
                                type: change.type.name, key: row.key, field: field.name, target: target, targetKey: key)
                            : .dangling(
                                type: change.type.name, key: row.key, field: field.name, target: target, targetKey: key)
                    )
                }
            }
        }
        return problems + (try referrers(ofDeletesIn: changes, in: db)) + (try referrersLeftBehind(by: changes, in: db))
    }

    /// For each updated row of a scoped type, its first referrer of another scope value: a row
    /// that moved to another value takes the rows that reference it along, or the reference
    /// would cross from one value to another.
    private func referrersLeftBehind(by changes: [ValidatedChanges], in db: Database) throws -> [ReferenceProblem] {
        var problems: [ReferenceProblem] = []
        for change in changes where change.type.isScoped && !change.updates.isEmpty {
            for (referrer, field) in schema.references(to: change.type.name) where referrer.isScoped {
                let statement = try db.cachedStatement(sql: tables[referrer.name]!.referrerOfOtherScope(through: field))
                for row in change.updates {
                    guard let scope = change.type.scopeValue(key: row.key, values: row.values),
                        let holder = try DatabaseValue.fetchOne(
                            statement,
                            arguments: [
                                ValueMapping.databaseValue(key: row.key), ValueMapping.databaseValue(key: scope),
                            ])
                    else { continue }
                    problems.append(
                        .crossScope(
                            type: referrer.name, key: ValueMapping.jsonKey(holder), field: field.name,
                            target: change.type.name, targetKey: row.key))
                }
            }
        }
        return problems
    }

    /// For each row `changes` delete that some row points at, its first referrer per reference
    /// field: after the write, a broken reference; when the delete conflicts, rows the answer holds.
    func referrers(ofDeletesIn changes: [ValidatedChanges], in db: Database) throws -> [ReferenceProblem] {
        var problems: [ReferenceProblem] = []
        for change in changes where !change.deletes.isEmpty {
            for (referrer, field) in schema.references(to: change.type.name) {
                let statement = try db.cachedStatement(sql: tables[referrer.name]!.referrer(through: field))
                for key in change.deletes {
                    if let holder = try DatabaseValue.fetchOne(
                        statement, arguments: [ValueMapping.databaseValue(key: key)])
                    {
                        problems.append(
                            .referenced(
                                type: change.type.name, key: key, referrer: referrer.name,
                                referrerKey: ValueMapping.jsonKey(holder), field: field.name))
                    }
                }
            }
        }
        return problems
    }

    private func write(_ change: ValidatedChanges, revision: Int64, in db: Database) throws {
        let table = tables[change.type.name]!
        let insert = try db.cachedStatement(sql: table.insert)
        for row in change.creates {
            do {
                try StatementValues.execute(insert, row: row, of: change.type, revision: revision)
            } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_PRIMARYKEY {
                throw invalid(
                    .rowExists, "\(change.type.name)[\(row.key.keyString!)] cannot be created: it already exists")
            }
        }
        let update = try db.cachedStatement(sql: table.update)
        for row in change.updates {
            try update.execute(arguments: ValueMapping.updateArguments(row, of: change.type, revision: revision))
            guard db.changesCount == 1 else {
                throw invalid(
                    .rowNotFound, "\(change.type.name)[\(row.key.keyString!)] cannot be updated: it does not exist")
            }
        }
        let delete = try db.cachedStatement(sql: table.delete)
        for key in change.deletes {
            try delete.execute(arguments: [ValueMapping.databaseValue(key: key)])
            guard db.changesCount == 1 else {
                throw invalid(
                    .rowNotFound, "\(change.type.name)[\(key.keyString!)] cannot be deleted: it does not exist")
            }
        }
        // A deleted key is never given to a pushed row (a client may still hold a reference to it).
        if let largest = change.deletes.compactMap({ if case .int(let key) = $0 { key } else { nil } }).max() {
            try db.execute(
                sql:
                    "INSERT INTO _seedsync_keys (type, last) VALUES (?, ?) ON CONFLICT (type) DO UPDATE SET last = max(last, excluded.last)",
                arguments: [change.type.name, largest]
            )
        }
    }

    /// For a type scoped by a field, the stored scope value of each row `change` deletes, and of
    /// each row it updates to another scope value: the change set's `from` (``TypeChanges/from``).
    /// Read before the rows are written; a missing row is left out (the write refuses it).
    private func scopesBefore(_ change: ValidatedChanges, in db: Database) throws -> [String: JSONValue] {
        guard let scopedBy = change.type.scopedBy, scopedBy != change.type.primaryKey.name else { return [:] }
        let statement = try db.cachedStatement(sql: tables[change.type.name]!.scopeOfRow)
        let scopeType = schema.scope?.type.fieldType ?? .integer
        func stored(_ key: JSONValue) throws -> JSONValue? {
            try DatabaseValue.fetchOne(statement, arguments: [ValueMapping.databaseValue(key: key)]).map {
                ValueMapping.jsonValue($0, as: scopeType)
            }
        }
        var from: [String: JSONValue] = [:]
        for key in change.deletes {
            from[key.keyString!] = try stored(key)
        }
        for row in change.updates {
            let after = change.type.scopeValue(key: row.key, values: row.values)
            if let before = try stored(row.key), before != after { from[row.key.keyString!] = before }
        }
        return from
    }

    /// The change set as served by `/v1/sync`: canonical order, normalized values, `revision` in
    /// every row, and `from` for the rows that left a scope value.
    private func loggedChangeSet(_ changes: [ValidatedChanges], revision: Int64, from: [String: [String: JSONValue]])
        -> ChangeSet
    {
        let typeChanges = changes.map { change in
            var attributes: [String: [String: JSONValue]] = [:]
            for row in change.creates + change.updates {
                var values = Dictionary(uniqueKeysWithValues: zip(change.type.fields.map(\.name), row.values))
                values[SchemaNames.revisionColumn] = .int(revision)
                attributes[row.key.keyString!] = values
            }
            return TypeChanges(
                type: change.type.name,
                create: change.creates.map(\.key),
                update: change.updates.map(\.key),
                delete: change.deletes,
                attributes: attributes,
                from: from[change.type.name] ?? [:]
            )
        }
        return ChangeSet(revision: revision, changes: typeChanges).canonical(in: schema)
    }

    private func invalid(_ code: ChangeSetError.Code, _ message: String) -> SyncStoreError {
        .invalidChangeSet(ChangeSetError(code, message))
    }
}
