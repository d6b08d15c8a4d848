import PostgresNIO
public import SeedSyncModel

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

    public func schemaInfo() async throws -> SchemaInfo {
        let types = schema.types
        let counts = types.map { "(\(tables[$0.name]!.count))" }
        let sql = "SELECT revision, min_revision\(counts.map { ", " + $0 }.joined()) FROM seedsync._state WHERE id = 1"
        let schema = self.schema
        return try await withConnection { [self] connection in
            guard let row = try await query(sql, on: connection).first else {
                throw SyncStoreError.schemaMismatch("seedsync._state is empty")
            }
            let cells = row.makeRandomAccess()
            let revision = try cells[0].decode(Int64.self)
            let minRevision = try cells[1].decode(Int64.self)
            var rowCounts: [String: Int] = [:]
            for (index, type) in types.enumerated() {
                rowCounts[type.name] = Int(try cells[index + 2].decode(Int64.self))
            }
            return SchemaInfo(schema: schema, revision: revision, minRevision: minRevision, rowCounts: rowCounts)
        }
    }

    /// The page, parsed from ``snapshotPageJSON(of:after:limit:)``, so the two never disagree.
    public func snapshotPage(of type: String, after: JSONValue?, limit: Int) async throws -> SnapshotPage {
        try SnapshotPage(json: JSONParser.parse(try await snapshotPageJSON(of: type, after: after, limit: limit)))
    }

    /// Up to `limit` rows after `after`, keyset-paged on the primary key's index, with the state's
    /// revision, in one statement (`PostgresTableSQL/snapshot(after:)`), read from typed columns
    /// (`WireRow/init(cells:at:of:table:)`). One row of look-ahead tells whether there is more.
    public func snapshotPageJSON(of type: String, after: JSONValue?, limit: Int) async throws -> [UInt8] {
        let table = try self.table(type)
        var binds = PostgresBindings()
        if let after { binds.append(key: after) }
        binds.append(Int64(limit) + 1)
        let sql = table.snapshot(after: after != nil)
        let query = PostgresQuery(unsafeSQL: sql, binds: binds)
        let name = "\(tableSchema).\(type)"
        return try await withConnection { [self] connection in
            var revision: Int64 = 0
            var rows: [[JSONValue]] = []
            var positions: [Int]?
            for try await row in try await connection.query(query, logger: logger) {
                let cells = row.makeRandomAccess()
                revision = try cells[0].decode(Int64.self)
                if positions == nil {
                    positions = try WireRow.positions(in: cells, from: 2, of: table.type, table: name)
                }
                guard let positions, cells[positions[0]].bytes != nil else { continue }
                guard let rowRevision = try cells[1].decode(Int64?.self) else {
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
                type: type, revision: revision, columns: table.type.columnNames, rowCount: rows.count)
            for row in rows { writer.value(.array(row)) }
            return SnapshotPage.endJSON(&writer, next: more ? rows.last![0] : .null)
        }
    }

    /// The change sets after `revision`: after a fresh read of the state (shared by the requests
    /// that arrive together, see `SharedReads`), those this process already assembled come
    /// from the cache, and the rest are read from the log once for every request that needs the
    /// same revisions, then cached. A committed revision never changes, so only the state read
    /// must be newer than the request; the log read checks in its own snapshot that compaction
    /// has not removed the rows in between.
    public func changeFeed(after revision: Int64, limit: Int, byteBudget: Int) async throws -> ChangeFeed {
        let state = try await stateReads.value(for: 0) { [self] in try await readState() }
        try ChangeLogReader.check(requested: revision, revision: state.revision, minRevision: state.minRevision)
        let last = revision + min(Int64(limit), state.revision - revision)
        var feed = ChangeFeed.Builder(after: revision, byteBudget: byteBudget)
        changeSets.fill(&feed, through: last)
        if !feed.isFull, feed.revision < last {
            let range = LogRange(after: feed.revision, last: last)
            let read = try await logReads.value(for: range) { [self] in try await readChangeSets(range) }
            if read.minRevision > range.after {
                throw SyncStoreError.historyExpired(requested: revision, minRevision: read.minRevision)
            }
            for changeSet in read.changeSets where !feed.append(changeSet) { break }
        }
        return feed.feed(newest: state.revision)
    }

    /// Assembles the change sets of `range` from the logged rows, in one statement, and caches
    /// them; with the `minRevision` of the same snapshot, so the caller can tell whether
    /// compaction removed them first.
    private func readChangeSets(_ range: LogRange) async throws -> LoggedChangeSets {
        var binds = PostgresBindings()
        binds.append(range.after)
        binds.append(range.last)
        let query = PostgresQuery(unsafeSQL: Self.changeFeedSQL, binds: binds)
        let read = try await withConnection { [self] connection in
            var log = ChangeLogReader(schema: schema, tables: tables, tableSchema: tableSchema)
            for try await row in try await connection.query(query, logger: logger).decode(
                (Int64, Int64, Int64?, String?, String?, String?, ByteBuffer?).self
            ) {
                try log.add(row)
            }
            guard log.minRevision <= range.after else {
                return LoggedChangeSets(minRevision: log.minRevision, changeSets: [])
            }
            return LoggedChangeSets(
                minRevision: log.minRevision, changeSets: log.changeSets(after: range.after, through: range.last))
        }
        changeSets.insert(read.changeSets)
        return read
    }

    /// The newest revision and the oldest a client may sync from.
    private func readState() async throws -> LogState {
        try await withConnection { [self] connection in
            let rows = try await query(
                "SELECT revision, min_revision FROM seedsync._state WHERE id = 1", on: connection)
            let (revision, minRevision) = try rows[0].decode((Int64, Int64).self)
            return LogState(revision: revision, minRevision: minRevision)
        }
    }

    /// The state's revisions, then the logged rows of revisions `$1` (exclusive) to `$2`: a range
    /// scan of the log's primary key, in one statement.
    static let changeFeedSQL = """
        SELECT s.revision, s.min_revision, c.revision, c.type, c.key, c.op, c.data
        FROM seedsync._state s LEFT JOIN LATERAL (
          SELECT revision, type, key, op, data FROM seedsync._changes
          WHERE revision > $1 AND revision <= $2 AND op <> 'x'
        ) c ON true WHERE s.id = 1 ORDER BY c.revision
        """

    /// Every key of `type`, in key order.
    public func keys(of type: String) async throws -> [JSONValue] {
        let table = try self.table(type)
        return try await withConnection { [self] connection in
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
