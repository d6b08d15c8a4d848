import PostgresNIO
public import SeedSyncModel
public import SeedSyncStore

extension PostgresSyncStore {
    /// The revisions and exact row counts, read in one statement (one snapshot).
    public func revisions() async throws -> (revision: Int64, minRevision: Int64) {
        try await withConnection { [self] connection in
            guard
                let row = try await query(
                    "SELECT revision, min_revision FROM seedsync._state WHERE id = 1", on: connection
                ).first
            else {
                throw SyncStoreError.schemaMismatch("seedsync._state is empty")
            }
            return try row.decode((Int64, Int64).self)
        }
    }

    public func schemaHistory() async throws -> SchemaHistory {
        try await withConnection { [self] connection in try await currentServed(on: connection).versions.history }
    }

    /// The schema of `version` with the revisions and exact row counts, read in one statement (one
    /// snapshot) with the newest version number; read again when that shows a newer version.
    /// The rows of a scoped type are counted for `grant`'s values alone (`= ANY($1)`).
    public func schemaInfo(version: Int?, grant: ScopeGrant) async throws -> SchemaInfo {
        try await withConnection { [self] connection in
            for _ in 0..<3 {
                let served = self.servedTables.get()
                let projection = try served.versions.projection(version)
                // Without the row counts (optional in the protocol) while a table is locked or gone.
                var counting = !lockedTables.isMarked(LockedTables.counts)
                let types = counting ? served.schema.types : []
                // The granted values, bound as `$1` when a counted type is scoped.
                let scope = served.schema.scope
                let granted =
                    types.contains(where: \.isScoped) ? scope.flatMap { grant.sortedValues(as: $0.type) } : nil
                let counts = types.map {
                    ", (\(served.tables[$0.name]!.count(scoped: granted != nil && $0.isScoped)))"
                }.joined()
                let sql =
                    "SELECT revision, min_revision, \(PostgresSchemaRecords.newestColumn)\(counts) FROM seedsync._state WHERE id = 1"
                var binds = PostgresBindings()
                if let granted, let scope { binds.append(scopeValues: granted, as: scope.type) }
                let rows: [PostgresRow]
                do {
                    rows = try await query(sql, binds, on: connection)
                } catch let error as PSQLError where error.sqlState == "55P03" && counting {
                    lockedTables.mark(LockedTables.counts)
                    continue
                } catch let error as PSQLError where error.sqlState == "42P01" && counting {
                    // A served table is gone (renamed, or dropped to be made again): the schema and
                    // revisions are still served, without counts; pages of it answer 503.
                    rows = try await query(
                        "SELECT revision, min_revision, \(PostgresSchemaRecords.newestColumn) FROM seedsync._state WHERE id = 1",
                        on: connection)
                    counting = false
                }
                guard let row = rows.first else {
                    throw SyncStoreError.schemaMismatch("seedsync._state is empty")
                }
                let cells = row.makeRandomAccess()
                let newest = try cells[2].decode(Int.self)
                guard newest == served.versions.storedNewest else {
                    _ = try await self.served(newest: newest, on: connection)
                    continue
                }
                var rowCounts: [String: Int] = [:]
                for (index, type) in types.enumerated() where counting {
                    rowCounts[type.name] = Int(try cells[index + 3].decode(Int64.self))
                }
                return projection.project(
                    SchemaInfo(
                        schema: served.schema, revision: try cells[0].decode(Int64.self),
                        minRevision: try cells[1].decode(Int64.self), rowCounts: counting ? rowCounts : nil))
            }
            throw SyncStoreError.storeUnavailable("the schema of \(location) kept changing while it was read")
        }
    }

    /// Up to `limit` rows after `after`, keyset-paged on the primary key's index, with the state's
    /// revision and newest schema version, in one statement (`PostgresTableSQL/snapshot(after:)`),
    /// read from typed columns (`WireRow/init(cells:at:of:table:)`) in the newest version, then
    /// projected to `version`. One row of look-ahead tells whether there is more. A page read
    /// while a newer version was made is read again in it. A page of a scoped type holds the rows
    /// of `grant`'s values alone (`= ANY(…)`, on the scope column's index when it has one).
    public func snapshotPageJSON(
        of type: String, after: JSONValue?, limit: Int, version: Int?, fields: [String]?, grant: ScopeGrant
    )
        async throws -> [UInt8]
    {
        if let table = servedTables.get().tables[type] {
            try lockedTables.check(type, name: "\(tableSchema).\(table.type.name)")
        }
        return try await withConnection { [self] connection in
            for _ in 0..<3 {
                let served = self.servedTables.get()
                let projection = try served.versions.projection(version)
                guard let asked = projection.target.schema.type(named: type) else {
                    throw SyncStoreError.unknownType(type)
                }
                if let fields { _ = try asked.selecting(fields) }
                var table = try served.table(type)
                if projection.isNewest, let fields { table = try table.selecting(fields) }
                let granted = served.schema.scope.flatMap { scope in
                    table.type.isScoped ? grant.sortedValues(as: scope.type).map { ($0, scope.type) } : nil
                }
                let page = try await lockTimeout(of: table) { [table] in
                    try await self.page(of: table, after: after, granted: granted, limit: limit, on: connection)
                }
                guard page.schemaVersion == served.versions.storedNewest else {
                    _ = try await self.served(newest: page.schemaVersion, on: connection)
                    continue
                }
                guard !projection.isNewest else { return page.json }
                let read = try SnapshotPage(json: JSONParser.parse(page.json))
                return try projection.project(read, selecting: fields).jsonBytes()
            }
            throw SyncStoreError.storeUnavailable("the schema of \(location) kept changing while a page was read")
        }
    }

    /// Each field's newest column read for uniformity (`PostgresTableSQL.uniformity(of:scoped:)`)
    /// in one statement, which also reads the revision; read again in the newer schema when the
    /// statement saw a version this process has not loaded yet.
    public func uniformFields(of type: String, fields: [String], version: Int?, grant: ScopeGrant) async throws
        -> UniformFields
    {
        if servedTables.get().tables[type] != nil { try lockedTables.check(type, name: "\(tableSchema).\(type)") }
        return try await withConnection { [self] connection in
            for _ in 0..<3 {
                let served = self.servedTables.get()
                let sources = try served.versions.projection(version).newestSources(of: type, fields: fields)
                let columns = sources.compactMap { if case .column(let name) = $0.source { name } else { nil } }
                let table = try served.table(type).selecting(columns)
                let granted = served.schema.scope.flatMap { scope in
                    table.type.isScoped ? grant.sortedValues(as: scope.type).map { ($0, scope.type) } : nil
                }
                let read = try await lockTimeout(of: table) {
                    try await self.uniformity(of: table, granted: granted, on: connection)
                }
                guard read.schemaVersion == served.versions.storedNewest else {
                    _ = try await self.served(newest: read.schemaVersion, on: connection)
                    continue
                }
                return UniformFields(type: type, revision: read.revision, sources: sources, columns: read.values)
            }
            throw SyncStoreError.storeUnavailable("the schema of \(location) kept changing while a table was read")
        }
    }

    /// The revision, the newest version number, and the value of each of `table`'s fields that
    /// holds one value in every row, by column name (`nil` when the table has no row).
    private func uniformity(
        of table: PostgresTableSQL, granted: ([JSONValue], KeyType)?, on connection: PostgresConnection
    ) async throws -> (revision: Int64, schemaVersion: Int, values: [String: JSONValue]?) {
        var binds = PostgresBindings()
        if let granted { binds.append(scopeValues: granted.0, as: granted.1) }
        let query = PostgresQuery(
            unsafeSQL: table.uniformity(of: table.type.fields.map(\.name), scoped: granted != nil), binds: binds)
        let name = "\(tableSchema).\(table.type.name)"
        for row in try await connection.rows(query, logger: logger) {
            let cells = row.makeRandomAccess()
            let revision = try cells[0].decode(Int64.self)
            let schemaVersion = try cells[1].decode(Int.self)
            try TableHealth(try cells[2].decode(String?.self), table: name, type: table.type.name).check()
            let positions = try WireRow.positions(in: cells, from: 4, of: table.type, table: name)
            guard cells[positions[0]].bytes != nil else { return (revision, schemaVersion, nil) }
            let uniform = try cells[3].decode([Bool].self)
            let first = try WireRow(cells: cells, at: positions, of: table.type, table: name).values.dropFirst()
            var values: [String: JSONValue] = [:]
            for (field, (isUniform, value)) in zip(table.type.fields, zip(uniform, first)) where isUniform {
                values[field.name] = value
            }
            return (revision, schemaVersion, values)
        }
        throw SyncStoreError.storeUnavailable("\(location) has no state row: the store's seedsync schema was changed")
    }

    /// One page in the newest version as `table` describes it, and the newest version number the
    /// same statement saw.
    private func page(
        of table: PostgresTableSQL, after: JSONValue?, granted: ([JSONValue], KeyType)?, limit: Int,
        on connection: PostgresConnection
    ) async throws -> (json: [UInt8], schemaVersion: Int) {
        var binds = PostgresBindings()
        if let after { binds.append(key: after) }
        if let granted { binds.append(scopeValues: granted.0, as: granted.1) }
        binds.append(Int64(limit) + 1)
        let query = PostgresQuery(
            unsafeSQL: table.snapshot(after: after != nil, scoped: granted != nil), binds: binds)
        let name = "\(tableSchema).\(table.type.name)"
        var revision: Int64 = 0
        var schemaVersion = 0
        var rows: [[JSONValue]] = []
        var positions: [Int]?
        for row in try await connection.rows(query, logger: logger) {
            let cells = row.makeRandomAccess()
            revision = try cells[0].decode(Int64.self)
            schemaVersion = try cells[1].decode(Int.self)
            try TableHealth(try cells[2].decode(String?.self), table: name, type: table.type.name).check()
            if positions == nil {
                positions = try WireRow.positions(in: cells, from: 4, of: table.type, table: name)
            }
            guard let positions, cells[positions[0]].bytes != nil else { continue }
            guard let rowRevision = try cells[3].decode(Int64?.self) else {
                throw SyncStoreError.schemaMismatch(
                    "a row of \(name) has no revision: it was written with the capture triggers switched off, so clients never heard of it"
                )
            }
            var values = try WireRow(cells: cells, at: positions, of: table.type, table: name).values
            values.append(.int(rowRevision))
            rows.append(values)
        }
        let more = rows.count > limit
        if more { rows.removeLast() }
        var writer = SnapshotPage.beginJSON(
            type: table.type.name, revision: revision, columns: table.type.columnNames, rowCount: rows.count)
        for row in rows { writer.value(.array(row)) }
        return (SnapshotPage.endJSON(&writer, next: more ? rows.last![0] : .null), schemaVersion)
    }

    /// The change sets after `revision`, as `ChangeFeedReads` serves them: a fresh state read
    /// shared by the requests that arrive together, those this process already assembled from its
    /// cache, the rest read from the log once for every request that needs them.
    ///
    /// Change sets are assembled and cached per schema version: a committed revision reads the
    /// same in a given version for good (versions made later apply to later revisions only).
    public func changeFeed(after revision: Int64, limit: Int, byteBudget: Int, version: Int?) async throws
        -> ChangeFeed
    {
        let state = try await feedReads.state { [self] in try await readState() }
        let projection = try servedTables.get().versions.projection(version)
        return try await feedReads.feed(
            after: revision, limit: limit, byteBudget: byteBudget, version: projection.target.number, state: state
        ) { [self] range in try await readChangeSets(range, projection: projection) }
    }

    /// Assembles the change sets of `range` from the logged rows, in one statement; with the
    /// `minRevision` of the same snapshot, so the caller can tell whether compaction removed them
    /// first.
    private func readChangeSets(_ range: LogRange, projection: VersionProjection) async throws -> LoggedChangeSets {
        var binds = PostgresBindings()
        binds.append(range.after)
        binds.append(range.last)
        let query = PostgresQuery(unsafeSQL: Self.changeFeedSQL, binds: binds)
        let served = self.servedTables.get()
        return try await withConnection { [self] connection in
            var log = ChangeLogReader(projection: projection, served: served, tableSchema: tableSchema)
            for row in try await connection.rows(query, logger: logger).decode(
                (Int64, Int64, Int64?, String?, String?, String?, ByteBuffer?, String?).self
            ) {
                try log.add(row)
            }
            guard log.minRevision <= range.after else {
                return LoggedChangeSets(minRevision: log.minRevision, changeSets: [])
            }
            return LoggedChangeSets(
                minRevision: log.minRevision, changeSets: log.changeSets(after: range.after, through: range.last))
        }
    }

    /// The newest revision, the oldest a client may sync from and the newest schema version; the
    /// served versions are read again when that is newer than the ones in memory.
    private func readState() async throws -> LogState {
        try await withConnection { [self] connection in
            let rows = try await query(
                "SELECT revision, min_revision, \(PostgresSchemaRecords.newestColumn) FROM seedsync._state WHERE id = 1",
                on: connection)
            let (revision, minRevision, newest) = try rows[0].decode((Int64, Int64, Int).self)
            _ = try await served(newest: newest, on: connection)
            return LogState(revision: revision, minRevision: minRevision, schemaVersion: newest)
        }
    }

    /// The state's revisions, then the logged rows of revisions `$1` (exclusive) to `$2` (each
    /// with its scope value before, see `CaptureSQL`): a range
    /// scan of the log's primary key, in one statement.
    package static let changeFeedSQL = """
        SELECT s.revision, s.min_revision, c.revision, c.type, c.key, c.op, c.data, c.from_scope
        FROM seedsync._state s LEFT JOIN LATERAL (
          SELECT revision, type, key, op, data, from_scope FROM seedsync._changes
          WHERE revision > $1 AND revision <= $2 AND op <> 'x'
        ) c ON true WHERE s.id = 1 ORDER BY c.revision
        """

    /// Every key of `type`, in key order.
    public func keys(of type: String) async throws -> [JSONValue] {
        try await withConnection { [self] connection in
            let table = try await currentServed(on: connection).table(type)
            var keys: [JSONValue] = []
            for row in try await query(table.keys, on: connection) {
                if table.type.primaryKey.type == .integer {
                    keys.append(.int(try row.decode(Int64.self)))
                } else {
                    keys.append(.string(try row.decode(String.self)))
                }
            }
            return keys
        }
    }
}
