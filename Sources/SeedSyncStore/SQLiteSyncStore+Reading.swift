import GRDB
public import SeedSyncModel
import SeedSyncSQL

extension SQLiteSyncStore {
    public func schemaInfo() async throws -> SchemaInfo {
        let schema = self.schema
        let tables = self.tables
        return try await pool.read { db in
            let state = try StateRecord.fetch(db)
            let counts = try Self.rowCounts(tables, in: db)
            return SchemaInfo(
                schema: schema, revision: state.revision, minRevision: state.minRevision, rowCounts: counts)
        }
    }

    public func revisions() async throws -> (revision: Int64, minRevision: Int64) {
        let state = try await pool.read { db in try StateRecord.fetch(db) }
        return (state.revision, state.minRevision)
    }

    /// The page, read back from ``snapshotPageJSON(of:after:limit:)``: one mapping from stored
    /// values to wire values, so the two can never disagree.
    public func snapshotPage(of type: String, after: JSONValue?, limit: Int) async throws -> SnapshotPage {
        try SnapshotPage(json: JSONParser.parse(try await snapshotPageJSON(of: type, after: after, limit: limit)))
    }

    /// Up to `limit` rows after `after` as page JSON, written from the statement's columns as they
    /// are read. One row of look-ahead: a row past `limit` means there is more, and `next` is the
    /// key of the page's last row.
    public func snapshotPageJSON(of type: String, after: JSONValue?, limit: Int) async throws -> [UInt8] {
        let table = try self.table(type)
        return try await pool.read { db in
            let state = try StateRecord.fetch(db)
            let statement = try db.cachedStatement(sql: table.snapshot(after: after != nil))
            var arguments: [DatabaseValue] = after.map { [ValueMapping.databaseValue(key: $0)] } ?? []
            arguments.append((limit + 1).databaseValue)
            let cursor = try Row.fetchCursor(statement, arguments: StatementArguments(arguments))
            var writer = SnapshotPage.beginJSON(
                type: type, revision: state.revision, columns: table.type.columnNames, rowCount: limit)
            var count = 0
            var next = JSONValue.null
            while try cursor.next() != nil {
                count += 1
                if count > limit { break }
                if count == limit { next = StatementValues.key(column: 0, of: statement) }
                StatementValues.writeRow(of: table.type, from: statement, to: &writer)
            }
            return SnapshotPage.endJSON(&writer, next: count > limit ? next : .null)
        }
    }

    public func changeFeed(after revision: Int64, limit: Int, byteBudget: Int) async throws -> ChangeFeed {
        try await pool.read { db in
            let state = try StateRecord.fetch(db)
            if revision < state.minRevision {
                throw SyncStoreError.historyExpired(requested: revision, minRevision: state.minRevision)
            }
            if revision > state.revision {
                throw SyncStoreError.revisionAhead(requested: revision, revision: state.revision)
            }
            let cursor = try Row.fetchCursor(
                db.cachedStatement(
                    sql:
                        "SELECT revision, change_set FROM _seedsync_changes WHERE revision > ? ORDER BY revision LIMIT ?"
                ),
                arguments: [revision, limit]
            )
            var feed = ChangeFeed.Builder(after: revision, byteBudget: byteBudget)
            while let row = try cursor.next() {
                let json: [UInt8] = try row.withUnsafeData(atIndex: 1) { data in data.map(Array.init) ?? [] }
                guard feed.append(EncodedChangeSet(revision: row[0], json: json)) else { break }
            }
            return feed.feed(newest: state.revision)
        }
    }

    /// Every key of `type`, in key order (for mutation generators and tests).
    public func keys(of type: String) async throws -> [JSONValue] {
        let table = try self.table(type)
        return try await pool.read { db in
            try DatabaseValue.fetchAll(db, sql: table.keys).map(ValueMapping.jsonKey)
        }
    }

    /// The number of rows of each type.
    public func rowCounts() async throws -> [String: Int] {
        let tables = self.tables
        return try await pool.read { db in try Self.rowCounts(tables, in: db) }
    }

    private static func rowCounts(_ tables: [String: TableSQL], in db: Database) throws -> [String: Int] {
        try tables.mapValues { try Int.fetchOne(db, sql: "SELECT count(*) FROM \($0.table)") ?? 0 }
    }
}
