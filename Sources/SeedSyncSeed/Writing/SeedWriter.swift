import Foundation
import GRDB
package import SeedSyncModel
import SeedSyncSQL

/// A seed file under construction: created for a schema at the revision its download starts from,
/// filled with snapshot pages, caught up with change sets, then finished. A page read at an
/// earlier revision (kept by the server or a cache) lowers the file's revision to its own, so that
/// the catch-up replays what changed since every page was read.
///
/// While it is built the file is a private work file: WAL mode with an exclusive lock (no `-shm`,
/// and no second process can open it), `synchronous = NORMAL`, and foreign keys unchecked until
/// ``finish()``, because pages of different types are read at different revisions. Each page is
/// inserted in one transaction with its type's download cursor, so an interrupted build resumes
/// from the last complete page (``open(at:)``, ``cursors()``).
///
/// ```swift
/// let writer = try await SeedWriter.create(at: "demo.sqlite.partial", schema: schema, revision: 40)
/// try await writer.insert(page)          // every page of every type
/// try await writer.apply(feed.changeSets) // catch-up from revision 40
/// try await writer.finish(to: "demo.sqlite.new") // VACUUM INTO, indexes, checks, digest
/// ```
package final class SeedWriter: Sendable {
    /// Where one type's download stands.
    package struct Cursor: Sendable, Hashable {
        /// The last key inserted, or `nil` before the first page.
        package var after: JSONValue?
        /// Whether the last page was inserted.
        package var isComplete: Bool

        package init(after: JSONValue?, isComplete: Bool) {
            self.after = after
            self.isComplete = isComplete
        }
    }

    package let path: String
    /// The schema of the types in the file.
    package let schema: DatasetSchema
    let queue: DatabaseQueue
    let tables: [String: TableSQL]
    private let applier: ChangeApplier

    private init(path: String, queue: DatabaseQueue, schema: DatasetSchema) {
        self.path = path
        self.queue = queue
        self.schema = schema
        tables = Dictionary(uniqueKeysWithValues: schema.types.map { ($0.name, TableSQL(type: $0)) })
        applier = ChangeApplier(schema: schema)
    }

    /// Creates an empty seed at `path` for `schema`, at `revision`, of the rows of scope values
    /// `scopes` (`nil`: every value).
    ///
    /// - Throws: ``SeedError`` when `path` exists or the schema is invalid.
    package static func create(at path: String, schema: DatasetSchema, revision: Int64, scopes: [JSONValue]? = nil)
        async throws -> SeedWriter
    {
        try schema.validate(allowingReservedTypeNames: true)
        guard !FileManager.default.fileExists(atPath: path) else {
            throw SeedError(.alreadyExists, "\(path) already exists")
        }
        let queue = try openQueue(at: path)
        do {
            try await initialize(queue, at: path, schema: schema, revision: revision, scopes: scopes)
        } catch {
            // A volume too full for even an empty seed: leave nothing behind.
            try? queue.close()
            DatabaseFiles(path).remove()
            throw error
        }
        return SeedWriter(path: path, queue: queue, schema: schema)
    }

    private static func initialize(
        _ queue: DatabaseQueue, at path: String, schema: DatasetSchema, revision: Int64, scopes: [JSONValue]?
    ) async throws {
        try await onFile(path) {
            try await queue.write { db in
                try db.execute(sql: "PRAGMA application_id = \(SeedFormat.applicationID)")
                try db.execute(sql: "PRAGMA user_version = \(schema.schemaVersion)")
                try db.execute(sql: SeedMetadata.createTable)
                var metadata = SeedMetadata(schema: schema, revision: revision)
                metadata.scopes = scopes
                try metadata.write(db)
                // Indexes come at `finish()`: built once from sorted keys, not updated row by row.
                for type in schema.types { try db.execute(sql: TableSQL(type: type).createTable(withoutRowID: true)) }
                try createBuildTable(
                    db, cursors: schema.types.map { [$0.name.databaseValue, .null, false.databaseValue] })
            }
        }
    }

    /// Opens a seed whose build was interrupted, to go on where it stopped.
    ///
    /// A file without build cursors but with a seed's metadata was interrupted in ``finish(to:)``,
    /// which drops the cursors only once every type is complete: its cursors come back as complete,
    /// and only the catch-up and the finish are left to do (the finish checks the references again).
    ///
    /// - Throws: ``SeedError`` when the file is not a seed, or another process has it open.
    package static func open(at path: String) async throws -> SeedWriter {
        guard FileManager.default.fileExists(atPath: path) else {
            throw SeedError(.notFound, "no unfinished seed at \(path)")
        }
        let queue = try openQueue(at: path)
        let metadata = try await queue.write { db in
            let metadata = try SeedMetadata.read(db, path: path)
            if try !db.tableExists(SeedFormat.buildTable) {
                try createBuildTable(
                    db, cursors: metadata.schema.types.map { [$0.name.databaseValue, .null, true.databaseValue] })
            }
            return metadata
        }
        return SeedWriter(path: path, queue: queue, schema: metadata.schema)
    }

    /// The revision the rows are at so far: the download's start (or its oldest page) until change
    /// sets are applied.
    package func revision() async throws -> Int64 {
        try await queue.read { db in try SeedMetadata.storedRevision(db) }
    }

    /// The scope values the file holds the rows of (`nil`: every value).
    package func scopes() async throws -> [JSONValue]? {
        try await queue.read { db in try SeedMetadata.read(db, path: path).scopes }
    }

    /// The download cursor of every type.
    package func cursors() async throws -> [String: Cursor] {
        try await queue.read { db in try Self.cursors(in: db) }
    }

    /// Checks one snapshot page and inserts its rows, moving its type's cursor in the same
    /// transaction. A page read before the file's revision lowers it to the page's.
    ///
    /// - Returns: the number of rows inserted.
    /// - Throws: ``SeedError`` when the page does not follow the cursor or a row does not fit the
    ///   schema; nothing of the page is written then.
    @discardableResult
    package func insert(_ page: FlatSnapshotPage) async throws -> Int {
        guard let table = tables[page.type] else {
            throw SeedError.invalidData("snapshot of unknown type '\(page.type)'")
        }
        guard page.columns == table.type.columnNames else {
            throw SeedError.invalidData(
                "snapshot page of \(page.type) has columns \(page.columns), expected \(table.type.columnNames)")
        }
        return try await Self.onFile(path) {
            try await queue.write { db in
                guard let cursor = try Self.cursors(in: db)[page.type], !cursor.isComplete else {
                    throw SeedError.invalidData("snapshot page of \(page.type) arrived after its last page")
                }
                let rows = try PageRows(page, type: table.type, after: cursor.after)
                try rows.insert(with: db.cachedStatement(sql: table.insert))
                try db.execute(
                    sql: "UPDATE \(SeedFormat.buildTable) SET after = ?, complete = ? WHERE type = ?",
                    arguments: [
                        rows.last.map(ValueMapping.databaseValue(key:))
                            ?? cursor.after.map(ValueMapping.databaseValue(key:)), rows.isLast, page.type,
                    ]
                )
                // A page kept by the server or a cache since before the download began: the
                // catch-up starts from it, so that it brings the page's rows forward.
                if page.revision < (try SeedMetadata.storedRevision(db)) {
                    try SeedMetadata.save(revision: page.revision, in: db)
                }
                return rows.count
            }
        }
    }

    /// Applies change sets (creates and updates as upserts, deletes) and stores the new revision,
    /// in one transaction. See ``ChangeApplier``; with `mayFollowGap`, the change sets of an answer
    /// with gaps (read for some scope values), which may follow any older revision; `chains`, the
    /// history chain at each (the last one's is stored with the revision).
    ///
    /// - Returns: the revision the file is at afterwards.
    @discardableResult
    package func apply(_ changeSets: [ChangeSet], chains: [HistoryChain?] = [], mayFollowGap: Bool = false)
        async throws -> Int64
    {
        let applier = self.applier
        return try await Self.onFile(path) {
            try await queue.write { db in
                let checked = try changeSets.enumerated().map { index, changeSet in
                    var checked = try applier.check(changeSet)
                    checked.mayFollowGap = mayFollowGap
                    checked.chain = index < chains.count ? chains[index] : nil
                    return checked
                }
                try applier.apply(checked, in: db)
                return try SeedMetadata.storedRevision(db)
            }
        }
    }

    /// Stores `chain`, the server's history chain at `revision`, when the file is at that revision
    /// (an answer that brought no change set).
    package func save(chain: HistoryChain, ifAt revision: Int64) async throws {
        try await Self.onFile(path) {
            try await queue.write { db in try SeedMetadata.save(chain: chain, ifAt: revision, in: db) }
        }
    }

    /// Removes an unfinished seed at `path`, unless another process is writing it.
    ///
    /// - Throws: ``SeedError`` when the file is in use.
    package static func removeUnfinished(at path: String) throws {
        guard FileManager.default.fileExists(atPath: path) else { return }
        do {
            try openQueue(at: path).close()
        } catch let error as SeedError where error.code == .busy {
            throw error
        } catch {
            // Not a database, or not a seed: nothing of value to keep.
        }
        DatabaseFiles(path).remove()
    }

    /// Whether the file at `path` holds no table: a build killed while it created its file (the
    /// tables are made in one transaction), with nothing to resume.
    package static func holdsNothing(at path: String) -> Bool {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path) else { return false }
        if (attributes[.size] as? Int) == 0 { return true }
        guard let queue = try? DatabaseQueue(path: path) else { return false }
        defer { try? queue.close() }
        return (try? queue.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM sqlite_schema") }) == 0
    }

    /// Closes the file without finishing it, keeping it for a later ``open(at:)``.
    package func close() throws {
        try queue.close()
    }

    /// The build cursors: one row per type with its last key and whether it is complete.
    static func createBuildTable(_ db: Database, cursors: [[DatabaseValue]]) throws {
        try db.execute(
            sql:
                "CREATE TABLE \(SeedFormat.buildTable) (type TEXT PRIMARY KEY NOT NULL, after, complete INTEGER NOT NULL)"
        )
        for cursor in cursors {
            try db.execute(
                sql: "INSERT INTO \(SeedFormat.buildTable) (type, after, complete) VALUES (?, ?, ?)",
                arguments: StatementArguments(cursor))
        }
    }

    private static func cursors(in db: Database) throws -> [String: Cursor] {
        var cursors: [String: Cursor] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT type, after, complete FROM \(SeedFormat.buildTable)") {
            let after = ValueMapping.jsonKey(row[1])
            cursors[row[0]] = Cursor(after: after == .null ? nil : after, isComplete: row[2])
        }
        return cursors
    }

    /// Runs `operation` on the file at `path`; SQLite's errors become ``SeedError``s naming the
    /// file, a full disk ``SeedError/Code/diskFull`` (see ``SeedError/database(_:_:)``).
    static func onFile<T>(_ path: String, _ operation: () async throws -> T) async throws -> T {
        do {
            return try await operation()
        } catch let error as DatabaseError {
            throw SeedError.database(error, "write \(path)", file: path)
        }
    }

    static func onFile<T>(_ path: String, _ operation: () throws -> T) throws -> T {
        do {
            return try operation()
        } catch let error as DatabaseError {
            throw SeedError.database(error, "write \(path)", file: path)
        }
    }

    /// The page cache while downloading: 32 MiB, so checkpoints do not read back what was just
    /// written (SQLite's default is 2 MiB).
    static let cacheKiB = 32 << 10
    /// The page cache of the finish, SQLite's default: the index builds sort in it, and sort
    /// fastest with it (the 1M-event seed's index: 0.54 s of CPU against 0.67 s with 8 MiB and
    /// 0.89 s with 64 MiB), on one thread (sorter threads, `PRAGMA threads`, took a third more
    /// CPU for a tenth less time, while the content digest wants the other core).
    static let finishKiB = 2 << 10

    /// The work file's settings: page size, its exclusive lock, WAL, the download's page cache.
    private static let workFile = """
        PRAGMA page_size = \(SeedFormat.pageSize);
        PRAGMA locking_mode = EXCLUSIVE;
        PRAGMA journal_mode = WAL;
        PRAGMA synchronous = NORMAL;
        PRAGMA cache_size = -\(cacheKiB);
        """

    /// A connection to `path` without foreign-key enforcement or busy waits, set up by `pragmas`.
    static func openQueue(at path: String, pragmas: String = workFile) throws -> DatabaseQueue {
        var configuration = Configuration()
        configuration.foreignKeysEnabled = false
        configuration.busyMode = .immediateError
        configuration.prepareDatabase { db in try db.execute(sql: pragmas) }
        do {
            return try DatabaseQueue(path: path, configuration: configuration)
        } catch let error as DatabaseError where error.resultCode == .SQLITE_BUSY || error.resultCode == .SQLITE_LOCKED
        {
            throw SeedError.busy(path)
        } catch let error as DatabaseError where error.resultCode == .SQLITE_NOTADB {
            throw SeedError.notASeed(path, "it is not a SQLite database")
        } catch let error as DatabaseError {
            throw SeedError.database(error, "open \(path)")
        }
    }
}
