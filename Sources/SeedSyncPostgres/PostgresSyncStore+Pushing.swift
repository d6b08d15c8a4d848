import PostgresNIO
public import SeedSyncModel
import SeedSyncStore

extension PostgresSyncStore {
    /// Applies a pushed change set once (see `SyncStore/push(_:retention:)`), in one
    /// transaction with its idempotency record in `seedsync._pushes`.
    ///
    /// The record is claimed first (`INSERT … ON CONFLICT DO NOTHING`): a second push of the same
    /// id, even one running at the same moment on another server, waits for the first to end and
    /// then answers with its result. The store's lock (the `_state` row every captured write
    /// takes) is held from before the revisions are checked to the commit, so no other writer can
    /// change a row between its check and the write. The rows are written in a savepoint, rolled
    /// back on a conflict or rejection: no revision is taken then, and the record is still kept.
    ///
    /// A row of a scoped type outside `grant` is, to the push, a row that does not exist (as on
    /// the SQLite store: an update or delete of it conflicts and the answer shows it gone, a
    /// reference to it dangles); a row written into a value outside it is rejected; the record
    /// keeps the writer's grant (`PushRecord`), so a retry by another writer learns nothing.
    public func push(_ changeSet: PushedChangeSet, retention: Duration, version: Int?, grant: ScopeGrant) async throws
        -> PushResult
    {
        let logger = self.logger
        // A dataset without a scope has shared rows alone: every grant writes them all.
        let grant = schema.scope == nil ? .all : grant
        return try await withTransaction { [self] connection in
            var purge = PostgresBindings()
            purge.append(Double(retention.components.seconds))
            _ = try await query(
                "DELETE FROM seedsync._pushes WHERE pushed_at < now() - make_interval(secs => $1)", purge,
                on: connection)
            var claim = PostgresBindings()
            claim.append(changeSet.id)
            guard
                try await !query(
                    "INSERT INTO seedsync._pushes (id) VALUES ($1) ON CONFLICT DO NOTHING RETURNING 1", claim,
                    on: connection
                ).isEmpty
            else {
                let recorded = try await query(
                    "SELECT result FROM seedsync._pushes WHERE id = $1", claim, on: connection)
                return try PushRecord.answer(
                    Array(try recorded[0].decode(String.self).utf8), id: changeSet.id, grant: grant)
            }
            let result = PushResult(
                id: changeSet.id,
                status: try await apply(changeSet, version: version, grant: grant, on: connection))
            var record = PostgresBindings()
            record.append(changeSet.id)
            record.append(String(decoding: PushRecord.encode(result, grant: grant), as: UTF8.self))
            _ = try await connection.rows(
                PostgresQuery(unsafeSQL: "UPDATE seedsync._pushes SET result = $2 WHERE id = $1", binds: record),
                logger: logger)
            return result
        }
    }

    private func apply(
        _ pushed: PushedChangeSet, version: Int?, grant: ScopeGrant, on connection: PostgresConnection
    ) async throws -> PushResult.Status {
        let served = try await lockServed(on: connection)
        let projection = try served.versions.projection(version)
        let view = PushView(store: self, grant: grant, projection: projection, connection: connection)
        let push: ValidatedPush
        do {
            let stored = try await view.storedRows(pushed)
            push = try served.schema.validatePush(projection.newest(pushed) { type, key in stored[type.name]?[key] })
        } catch let error as ChangeSetError {
            return .rejected(code: SyncStoreError.Code.invalidChangeSet.rawValue, message: error.description)
        }
        if let error = push.outsideScopeError(grant, scope: served.schema.scope) {
            return .rejected(code: SyncStoreError.Code.invalidChangeSet.rawValue, message: error.description)
        }
        if try await view.hasConflict(push) {
            // A delete refused for its stale revision keeps the row, and so the rows that reference it.
            let kept = try await referrers(ofDeletesIn: push.changes, on: connection)
            return .conflict(try await view.conflictRows(push, related: try await view.shown(kept)))
        }
        var keys: [String: [Int64: Int64]] = [:]
        _ = try await query("SAVEPOINT push", on: connection)
        do {
            for (type, temporary) in push.temporaryKeys {
                keys[type] = Dictionary(
                    uniqueKeysWithValues: zip(
                        temporary, try await newKeys(type, count: temporary.count, on: connection)))
            }
            let changes = push.resolved(with: keys)
            let revision = try await write(changes, defaulting: projection.fieldsUnknown(), on: connection)
            let problems = try await referenceProblems(of: changes, grant: grant, on: connection)
            guard problems.isEmpty else {
                _ = try await query("ROLLBACK TO SAVEPOINT push", on: connection)
                if let own = problems.first(where: { push.causes($0, keys: keys) }) {
                    return .rejected(
                        code: SyncStoreError.Code.invalidChangeSet.rawValue, message: own.error.description)
                }
                return .conflict(try await view.conflictRows(push, related: try await view.shown(problems)))
            }
            return .applied(revision: revision, keys: ValidatedPush.keyMap(keys))
        } catch let error as SyncStoreError where error.code == .invalidChangeSet {
            _ = try await query("ROLLBACK TO SAVEPOINT push", on: connection)
            return .rejected(code: error.code.rawValue, message: error.description)
        } catch let refusal as ForeignKeyRefusal {
            // A foreign key that is not deferrable (on an attached table) refused a reference: to
            // a served table, answered as a conflict, as the store's own reference check would be;
            // to a table the client cannot see, rejected with the reason, which the app is told.
            _ = try await query("ROLLBACK TO SAVEPOINT push", on: connection)
            guard try await refusal.pointsAt(any: tables.values.map(\.table), on: connection, logger: logger) else {
                return .rejected(code: refusal.error.code.rawValue, message: refusal.error.description)
            }
            return .conflict(try await view.conflictRows(push, related: []))
        }
    }

    /// `count` new keys of `type`: from the key column's sequence when it has one, else after
    /// the largest key in use and ever deleted or given out. Run while the store's lock is held,
    /// inside the push's savepoint (a key past the `bigint` range fails the statement).
    ///
    /// - Throws: `SyncStoreError` `invalidChangeSet` (``ChangeSetError`` `keysExhausted`) when the
    ///   keys would pass the largest `bigint` or the sequence's maximum.
    private func newKeys(_ type: String, count: Int, on connection: PostgresConnection) async throws -> [Int64] {
        do {
            return try await reserveKeys(type, count: count, on: connection)
        } catch let error as PSQLError where error.sqlState == "22003" || error.sqlState == "2200H" {
            throw SyncStoreError.invalidChangeSet(.keysExhausted(type))
        }
    }

    private func reserveKeys(_ type: String, count: Int, on connection: PostgresConnection) async throws -> [Int64] {
        let table = tables[type]!
        if let sequence = try await query(table.keySequence, on: connection).first.flatMap({
            try? $0.decode(String?.self)
        }) {
            var keys: [Int64] = []
            for _ in 0..<count {
                keys.append(
                    try await query(table.nextSequenceKey, PostgresBindings(key: .string(sequence)), on: connection)[0]
                        .decode(Int64.self))
            }
            return keys
        }
        var binds = PostgresBindings()
        binds.append(type)
        binds.append(Int64(count))
        let last = try await query(table.reserveKeys, binds, on: connection)[0].decode(Int64.self)
        return (0..<Int64(count)).map { last - Int64(count) + 1 + $0 }
    }
}

/// What one push reads of the stored rows, as its writer may see them: a row of a scoped type
/// outside the writer's grant reads as missing, so no answer tells another scope's rows from
/// absent ones.
private struct PushView {
    let store: PostgresSyncStore
    /// The scope values the writer may read and write.
    let grant: ScopeGrant
    /// The pusher's schema version: what its conflicts are answered in.
    let projection: VersionProjection
    let connection: PostgresConnection

    /// The stored fields of every row a client of an older version updates, by type and key, for
    /// ``VersionProjection/newest(_:current:)`` (which cannot wait for a query); none for the newest.
    func storedRows(_ pushed: PushedChangeSet) async throws -> [String: [JSONValue: [String: JSONValue]]] {
        guard !projection.isNewest else { return [:] }
        var rows: [String: [JSONValue: [String: JSONValue]]] = [:]
        for changes in pushed.changeSet.changes {
            guard let table = store.tables[changes.type] else { continue }
            let names = table.type.fields.map(\.name)
            for key in changes.update where table.type.primaryKey.type.accepts(key) {
                guard let row = try await visibleRow(of: table, key: key) else { continue }
                rows[changes.type, default: [:]][key] = Dictionary(
                    uniqueKeysWithValues: zip(names, row.values.dropFirst()))
            }
        }
        return rows
    }

    /// The row of `table` whose key is `key`, as wire values (key first, then fields) with its
    /// revision, or `nil` when there is none the writer may see.
    func visibleRow(of table: PostgresTableSQL, key: JSONValue) async throws
        -> (values: [JSONValue], revision: Int64)?
    {
        let name = "\(store.tableSchema).\(table.type.name)"
        guard let row = try await store.query(table.row, PostgresBindings(key: key), on: connection).first else {
            return nil
        }
        let cells = row.makeRandomAccess()
        let positions = try WireRow.positions(in: cells, from: 1, of: table.type, table: name)
        let values = try WireRow(cells: cells, at: positions, of: table.type, table: name).values
        guard
            grant.isAll || !table.type.isScoped
                || table.type.scopeValue(key: key, values: Array(values.dropFirst())).map(grant.includes) == true
        else { return nil }
        return (values, try cells[0].decode(Int64.self))
    }

    /// Whether a row the push updates or deletes changed or went since its base revision (or lies
    /// outside the grant), or a text key it creates exists.
    func hasConflict(_ push: ValidatedPush) async throws -> Bool {
        for change in push.changes {
            let table = store.tables[change.type.name]!
            let bases = push.baseRevisions[change.type.name] ?? [:]
            for key in change.updates.map(\.key) + change.deletes {
                guard let revision = try await revision(of: table, key: key), revision == bases[key.keyString!]
                else { return true }
            }
            if change.type.primaryKey.type == .text {
                for row in change.creates
                where try await !store.query(table.exists, PostgresBindings(key: row.key), on: connection).isEmpty {
                    return true
                }
            }
        }
        return false
    }

    /// The revision of `table[key]`, when the writer may see the row: from the row revisions alone
    /// when it may see every row of the table.
    private func revision(of table: PostgresTableSQL, key: JSONValue) async throws -> Int64? {
        guard !grant.isAll, table.type.isScoped else {
            return try await store.query(table.revision, PostgresBindings(key: key), on: connection).first?.decode(
                Int64.self)
        }
        return try await visibleRow(of: table, key: key)?.revision
    }

    /// The rows a conflict answer shows for `problems`: a missing or hidden target as gone (the
    /// push named its key), a referrer only when the writer may see it (its key is not the
    /// writer's to learn otherwise).
    func shown(_ problems: [ReferenceProblem]) async throws -> [(type: String, key: JSONValue)] {
        var rows: [(type: String, key: JSONValue)] = []
        for problem in problems {
            let row = problem.relatedRow
            if case .referenced = problem, try await isHidden(store.tables[row.type]!, row.key) { continue }
            rows.append(row)
        }
        return rows
    }

    /// Whether `table[key]` exists but lies outside the grant.
    private func isHidden(_ table: PostgresTableSQL, _ key: JSONValue) async throws -> Bool {
        guard !grant.isAll, table.type.isScoped, try await visibleRow(of: table, key: key) == nil else { return false }
        return try await !store.query(table.exists, PostgresBindings(key: key), on: connection).isEmpty
    }

    /// The conflict answer in the pusher's version: the current state of every row the push
    /// names, and of `related` rows, each as the writer may see it.
    func conflictRows(_ push: ValidatedPush, related: [(type: String, key: JSONValue)]) async throws -> ChangeSet {
        var rows = ConflictRows()
        let named = push.touchedKeys.flatMap { type, keys in keys.map { (type: type, key: $0) } }
        for (type, key) in named + related {
            let found = try await visibleRow(of: store.tables[type]!, key: key)
            rows.add(type, key, found.map { (Array($0.values.dropFirst()), $0.revision) })
        }
        return try projection.project(rows.changeSet(in: store.schema))
    }
}
