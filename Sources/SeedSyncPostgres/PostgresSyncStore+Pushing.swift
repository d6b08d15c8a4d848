import PostgresNIO
public import SeedSyncModel
public import SeedSyncStore

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
    /// Every row is shared (the store refuses a schema with a scope), so `grant` bounds nothing.
    public func push(_ changeSet: PushedChangeSet, retention: Duration, version: Int?, grant: ScopeGrant) async throws
        -> PushResult
    {
        let logger = self.logger
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
                return try PushResult(json: JSONParser.parse(Array(try recorded[0].decode(String.self).utf8)))
            }
            let result = PushResult(
                id: changeSet.id, status: try await apply(changeSet, version: version, on: connection))
            var record = PostgresBindings()
            record.append(changeSet.id)
            record.append(String(decoding: result.jsonBytes(), as: UTF8.self))
            _ = try await connection.rows(
                PostgresQuery(unsafeSQL: "UPDATE seedsync._pushes SET result = $2 WHERE id = $1", binds: record),
                logger: logger)
            return result
        }
    }

    private func apply(_ pushed: PushedChangeSet, version: Int?, on connection: PostgresConnection) async throws
        -> PushResult.Status
    {
        let served = try await lockServed(on: connection)
        let projection = try served.versions.projection(version)
        let push: ValidatedPush
        do {
            let stored = try await storedRows(pushed, projection: projection, on: connection)
            push = try served.schema.validatePush(projection.newest(pushed) { type, key in stored[type.name]?[key] })
        } catch let error as ChangeSetError {
            return .rejected(code: SyncStoreError.Code.invalidChangeSet.rawValue, message: error.description)
        }
        if try await hasConflict(push, on: connection) {
            // A delete refused for its stale revision keeps the row, and so the rows that reference it.
            let kept = try await referrers(ofDeletesIn: push.changes, on: connection)
            return .conflict(
                try await conflictRows(push, related: kept.map(\.relatedRow), projection: projection, on: connection))
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
            let problems = try await referenceProblems(of: changes, on: connection)
            guard problems.isEmpty else {
                _ = try await query("ROLLBACK TO SAVEPOINT push", on: connection)
                if let own = problems.first(where: { push.causes($0, keys: keys) }) {
                    return .rejected(
                        code: SyncStoreError.Code.invalidChangeSet.rawValue, message: own.error.description)
                }
                return .conflict(
                    try await conflictRows(
                        push, related: problems.map(\.relatedRow), projection: projection, on: connection))
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
            return .conflict(try await conflictRows(push, related: [], projection: projection, on: connection))
        }
    }

    /// The stored fields of every row a client of an older version updates, by type and key, for
    /// ``VersionProjection/newest(_:current:)`` (which cannot wait for a query); none for the newest.
    private func storedRows(_ pushed: PushedChangeSet, projection: VersionProjection, on connection: PostgresConnection)
        async throws -> [String: [JSONValue: [String: JSONValue]]]
    {
        guard !projection.isNewest else { return [:] }
        var rows: [String: [JSONValue: [String: JSONValue]]] = [:]
        for changes in pushed.changeSet.changes {
            guard let table = tables[changes.type] else { continue }
            let names = table.type.fields.map(\.name)
            for key in changes.update where table.type.primaryKey.type.accepts(key) {
                guard let row = try await storedRow(of: table, key: key, on: connection) else { continue }
                rows[changes.type, default: [:]][key] = Dictionary(
                    uniqueKeysWithValues: zip(names, row.values.dropFirst()))
            }
        }
        return rows
    }

    /// The row of `table` whose key is `key`, as wire values (key first, then fields) with its
    /// revision, or `nil` when there is none.
    private func storedRow(of table: PostgresTableSQL, key: JSONValue, on connection: PostgresConnection) async throws
        -> (values: [JSONValue], revision: Int64)?
    {
        let name = "\(tableSchema).\(table.type.name)"
        guard let row = try await query(table.row, PostgresBindings(key: key), on: connection).first else { return nil }
        let cells = row.makeRandomAccess()
        let positions = try WireRow.positions(in: cells, from: 1, of: table.type, table: name)
        let values = try WireRow(cells: cells, at: positions, of: table.type, table: name).values
        return (values, try cells[0].decode(Int64.self))
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

    /// Whether a row the push updates or deletes changed or went since its base revision, or a
    /// text key it creates exists.
    private func hasConflict(_ push: ValidatedPush, on connection: PostgresConnection) async throws -> Bool {
        for change in push.changes {
            let table = tables[change.type.name]!
            let bases = push.baseRevisions[change.type.name] ?? [:]
            for key in change.updates.map(\.key) + change.deletes {
                let rows = try await query(table.revision, PostgresBindings(key: key), on: connection)
                guard let row = rows.first, try row.decode(Int64.self) == bases[key.keyString!] else { return true }
            }
            if change.type.primaryKey.type == .text {
                for row in change.creates
                where try await !query(table.exists, PostgresBindings(key: row.key), on: connection).isEmpty {
                    return true
                }
            }
        }
        return false
    }

    /// The conflict answer in the pusher's version: the current state of every row the push
    /// names, and of `related` rows.
    private func conflictRows(
        _ push: ValidatedPush, related: [(type: String, key: JSONValue)], projection: VersionProjection,
        on connection: PostgresConnection
    ) async throws -> ChangeSet {
        var rows = ConflictRows()
        let named = push.touchedKeys.flatMap { type, keys in keys.map { (type: type, key: $0) } }
        for (type, key) in named + related {
            let found = try await storedRow(of: tables[type]!, key: key, on: connection)
            rows.add(type, key, found.map { (Array($0.values.dropFirst()), $0.revision) })
        }
        return try projection.project(rows.changeSet(in: schema))
    }
}
