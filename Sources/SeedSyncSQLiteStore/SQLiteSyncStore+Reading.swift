import Foundation
import GRDB
public import SeedSyncModel
import SeedSyncSQL
public import SeedSyncStore

extension SQLiteSyncStore {
    public func schemaHistory() async throws -> SchemaHistory {
        try await pool.read { db in try self.served(db).versions.history }
    }

    public func schemaInfo(version: Int?, grant: ScopeGrant) async throws -> SchemaInfo {
        try await pool.read { db in
            let state = try LogState.fetch(db)
            let served = try self.served(db, state)
            let projection = try served.versions.projection(version)
            let counts = try Self.rowCounts(served, grant: grant, in: db)
            return projection.project(
                SchemaInfo(
                    schema: served.schema, revision: state.revision, minRevision: state.minRevision, rowCounts: counts))
        }
    }

    public func revisions() async throws -> (revision: Int64, minRevision: Int64) {
        let state = try await pool.read { db in try LogState.fetch(db) }
        return (state.revision, state.minRevision)
    }

    /// Up to `limit` rows after `after` as page JSON, written from the statement's columns as they
    /// are read (in the newest version, of the `fields` asked for alone; projected when another
    /// version is asked for). One row of look-ahead: a row past `limit` means there is more, and
    /// `next` is the key of the page's last row.
    public func snapshotPageJSON(
        of type: String, after: JSONValue?, limit: Int, version: Int?, fields: [String]?, grant: ScopeGrant
    ) async throws -> [UInt8] {
        try await pool.read { db in
            let state = try LogState.fetch(db)
            let served = try self.served(db, state)
            let projection = try served.versions.projection(version)
            guard let asked = projection.target.schema.type(named: type) else {
                throw SyncStoreError.unknownType(type)
            }
            if let fields { _ = try asked.selecting(fields) }
            let table = try served.table(type)
            let scopes = grant.argument(for: table.type, in: served.schema)
            if projection.isNewest {
                let selected = try fields.map { TableSQL(type: try table.type.selecting($0)) } ?? table
                return try Self.page(
                    of: selected, after: after, scopes: scopes, limit: limit, revision: state.revision, in: db)
            }
            let json = try Self.page(
                of: table, after: after, scopes: scopes, limit: limit, revision: state.revision, in: db)
            return try projection.project(SnapshotPage(json: JSONParser.parse(json)), selecting: fields).jsonBytes()
        }
    }

    private static func page(
        of table: TableSQL, after: JSONValue?, scopes: DatabaseValue?, limit: Int, revision: Int64, in db: Database
    ) throws -> [UInt8] {
        let statement = try db.cachedStatement(sql: table.snapshot(after: after != nil, scoped: scopes != nil))
        var arguments: [DatabaseValue] = after.map { [ValueMapping.databaseValue(key: $0)] } ?? []
        if let scopes { arguments.append(scopes) }
        arguments.append((limit + 1).databaseValue)
        let cursor = try Row.fetchCursor(statement, arguments: StatementArguments(arguments))
        var writer = SnapshotPage.beginJSON(
            type: table.type.name, revision: revision, columns: table.type.columnNames, rowCount: limit)
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

    /// Each field's newest column read for uniformity (`TableSQL.uniformity(of:scoped:)`), one
    /// pass per column, in the transaction that reads the revision.
    public func uniformFields(of type: String, fields: [String], version: Int?, grant: ScopeGrant) async throws
        -> UniformFields
    {
        try await pool.read { db in
            let state = try LogState.fetch(db)
            let served = try self.served(db, state)
            let sources = try served.versions.projection(version).newestSources(of: type, fields: fields)
            let table = try served.table(type)
            let scopes = grant.argument(for: table.type, in: served.schema)
            var columns: [String: JSONValue]? = [:]
            for case (_, .column(let column)) in sources {
                let statement = try db.cachedStatement(sql: table.uniformity(of: column, scoped: scopes != nil))
                let arguments = scopes.map { StatementArguments([$0, $0]) } ?? StatementArguments()
                guard let row = try Row.fetchOne(statement, arguments: arguments) else {
                    columns = nil  // no row: every field holds its absent value
                    break
                }
                if !(row[1] as Bool) {
                    columns?[column] = ValueMapping.jsonValue(row[0], as: table.type.field(named: column)?.type)
                }
            }
            return UniformFields(type: type, revision: state.revision, sources: sources, columns: columns)
        }
    }

    /// The logged change sets after `revision`, as `ChangeFeedReads` serves them: a state read
    /// shared by the requests that arrive together, the change sets this process already read from
    /// its cache, and the rest from the log in a read transaction of their own, shared too, whose
    /// `minRevision` tells a range compacted in between (`historyExpired`). A change set is served
    /// as logged when it was written in the version asked for, else parsed and projected
    /// (`VersionProjection`), and cached in that version. The schema is read again when the state
    /// says another process upgraded it.
    public func changeFeed(after revision: Int64, limit: Int, byteBudget: Int, version: Int?) async throws
        -> ChangeFeed
    {
        let state = try await feedReads.state { [pool] in try await pool.read { db in try LogState.fetch(db) } }
        var tables = served.get()
        if state.schemaVersion != tables.versions.storedNewest {
            tables = try await pool.read { db in try self.served(db) }
        }
        let projection = try tables.versions.projection(version)
        return try await feedReads.feed(
            after: revision, limit: limit, byteBudget: byteBudget, version: projection.target.number, state: state
        ) { [pool] range in try await pool.read { db in try Self.logged(range, projection, in: db) } }
    }

    /// The logged change sets of `range`, until one passes its byte budget (that one included),
    /// with the log's `minRevision` in the same transaction.
    private static func logged(_ range: LogRange, _ projection: VersionProjection, in db: Database) throws
        -> LoggedChangeSets
    {
        let minRevision = try LogState.fetch(db).minRevision
        guard minRevision <= range.after else { return LoggedChangeSets(minRevision: minRevision, changeSets: []) }
        let statement = try db.cachedStatement(
            sql:
                "SELECT revision, change_set FROM _seedsync_changes WHERE revision > ? AND revision <= ? ORDER BY revision"
        )
        let cursor = try Row.fetchCursor(statement, arguments: [range.after, range.last])
        var read: [EncodedChangeSet] = []
        var bytes = 0
        while bytes <= range.byteBudget, try cursor.next() != nil {
            let logged = StatementValues.integer(column: 0, of: statement)
            let json = try projected(StatementValues.bytes(column: 1, of: statement), of: logged, projection)
            bytes += json.count
            read.append(EncodedChangeSet(revision: logged, json: json))
        }
        return LoggedChangeSets(minRevision: minRevision, changeSets: read)
    }

    /// The change set logged as `revision`, in the projection's version.
    static func loggedChangeSet(at revision: Int64, _ projection: VersionProjection, in db: Database) throws -> [UInt8]
    {
        let statement = try db.cachedStatement(sql: "SELECT change_set FROM _seedsync_changes WHERE revision = ?")
        guard let json = try Data.fetchOne(statement, arguments: [revision]) else {
            throw DatabaseError(resultCode: .SQLITE_ERROR, message: "revision \(revision) is not in the log")
        }
        return try projected(Array(json), of: revision, projection)
    }

    /// The logged `json` of `revision` in the projection's version.
    private static func projected(_ json: [UInt8], of revision: Int64, _ projection: VersionProjection) throws
        -> [UInt8]
    {
        guard !projection.servesAsWritten(revision: revision) else { return json }
        return try projection.project(ChangeSet(json: JSONParser.parse(json))).jsonBytes()
    }

    /// Every key of `type`, in key order (for mutation generators and tests).
    public func keys(of type: String) async throws -> [JSONValue] {
        try await pool.read { db in
            let table = try self.served(db).table(type)
            return try DatabaseValue.fetchAll(db, sql: table.keys).map(ValueMapping.jsonKey)
        }
    }

    /// The number of rows of each type.
    public func rowCounts() async throws -> [String: Int] {
        try await pool.read { db in try Self.rowCounts(self.served(db), grant: .all, in: db) }
    }

    /// The number of rows of each type `grant` reads.
    private static func rowCounts(_ served: ServedTables, grant: ScopeGrant, in db: Database) throws -> [String: Int] {
        try served.tables.mapValues { table in
            let scopes = grant.argument(for: table.type, in: served.schema)
            return try Int.fetchOne(
                db, sql: table.count(scoped: scopes != nil), arguments: StatementArguments(scopes.map { [$0] } ?? []))
                ?? 0
        }
    }
}
