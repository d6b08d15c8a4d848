import Foundation
import GRDB
import SeedSyncModel
import SeedSyncSQL
import SeedSyncSeed

/// What a migration (or a grant of more scope values, ``ImportSession/gain(_:granting:into:info:)``)
/// downloads before it touches the database: a throwaway SQLite file beside it
/// (`DATABASE.migration`) holding the new types' rows (or the gained values' rows), the new columns of the types that gained
/// some (a table of the key, the new fields and `revision`; a field that holds one value in
/// every row is kept as that value alone, ``uniform``), and the change sets from the
/// database's revision on, in the new version. The database then takes it all in one transaction
/// (see ``LocalDatabase/migrated(from:to:changes:staging:)``); a killed download leaves the file,
/// which the next run removes before it starts over.
struct MigrationStaging {
    let path: String
    /// The tables the file holds, by type name: new types whole, other types as key and new fields.
    let types: [String: EntityType]
    /// The new fields that hold one value in every row, by type and field, with that value: filled
    /// in, not downloaded (`UniformFields`).
    let uniform: [String: [String: JSONValue]]
    private let queue: DatabaseQueue

    /// The change sets table.
    static let changesTable = "_seedsync_staged_changes"

    /// Creates the file at `path` (replacing a leftover) with a table for each of `types`.
    init(at path: String, types: [EntityType], uniform: [String: [String: JSONValue]] = [:]) throws {
        DatabaseFiles(path).remove()
        self.path = path
        self.uniform = uniform
        self.types = Dictionary(uniqueKeysWithValues: types.map { ($0.name, $0) })
        var configuration = Configuration()
        // Rows arrive type by type; the database checks the references when it takes them in.
        configuration.foreignKeysEnabled = false
        configuration.prepareDatabase { db in
            // A copy of what the server has, made again when lost: no journal, no sync.
            try db.execute(sql: "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF")
        }
        do {
            queue = try DatabaseQueue(path: path, configuration: configuration)
            try queue.write { db in
                for type in types { try db.execute(sql: TableSQL(type: type).createTable(withoutRowID: false)) }
                try db.execute(
                    sql:
                        "CREATE TABLE \(Self.changesTable) (revision INTEGER PRIMARY KEY NOT NULL, change_set TEXT NOT NULL, may_follow_gap INTEGER NOT NULL)"
                )
            }
        } catch let error as DatabaseError {
            throw ImportError(SeedError.database(error, "create \(path)", file: path), otherwise: .storage)
        }
    }

    /// Stores the rows of `page`, checked against the staged type (keys in order after `after`).
    ///
    /// - Returns: the key to continue after, `nil` when the page was the type's last.
    func insert(_ page: FlatSnapshotPage, after: JSONValue?) throws -> JSONValue? {
        guard let type = types[page.type] else {
            throw ImportError(.invalidChangeSet, "the server sent a page of \(page.type), which was not asked for")
        }
        let rows: PageRows
        do {
            rows = try PageRows(page, type: type, after: after)
        } catch {
            throw ImportError(.invalidChangeSet, "the migration stopped: \(error)")
        }
        do {
            try write("store a page of \(type.name)") { db in
                try rows.insert(with: db.cachedStatement(sql: TableSQL(type: type).insert))
            }
        } catch let error as SeedError {
            throw ImportError(.invalidChangeSet, "the migration stopped: \(error)")
        }
        return rows.isLast ? nil : rows.last
    }

    /// Stores the change sets of `response` (``SyncResponse/changeSetsToApply``, a gapped answer's
    /// mark at its `maxRevision` included), in order, each made by `prepare` first.
    func append(_ response: SyncResponse, prepare: (ChangeSet) -> ChangeSet) throws {
        let changeSets = response.changeSetsToApply.map(prepare)
        let mayFollowGap = response.scopes != nil
        try write("store \(changeSets.count) change sets") { db in
            let insert = try db.cachedStatement(
                sql: "INSERT INTO \(Self.changesTable) (revision, change_set, may_follow_gap) VALUES (?, ?, ?)")
            for changeSet in changeSets {
                try insert.execute(
                    arguments: [
                        changeSet.revision, String(decoding: changeSet.jsonBytes(), as: UTF8.self), mayFollowGap,
                    ])
            }
        }
    }

    func close() throws {
        try queue.close()
    }

    private func write(_ action: String, _ body: (Database) throws -> Void) throws {
        do {
            try queue.write(body)
        } catch let error as DatabaseError {
            throw ImportError(SeedError.database(error, action, file: path), otherwise: .storage)
        }
    }

    /// Runs `body` on `writer`'s connection with the file attached as `staging`, outside a
    /// transaction (SQLite attaches no file inside one); `body` opens its own.
    func attached<T: Sendable>(to writer: any DatabaseWriter, _ body: @escaping @Sendable (Database) throws -> T)
        async throws -> T
    {
        let path = self.path
        return try await writer.writeWithoutTransaction { db in
            try db.execute(sql: "ATTACH DATABASE ? AS staging", arguments: [path])
            defer { try? db.execute(sql: "DETACH DATABASE staging") }
            return try body(db)
        }
    }

    /// The staged change sets, in order, checked by `applier`, read inside the database's
    /// transaction (the staging file attached as `staging`). Those of an answer read for some
    /// scope values may follow a gap.
    static func changeSets(in db: Database, checkedBy applier: ChangeApplier) throws -> [CheckedChangeSet] {
        try Row.fetchAll(db, sql: "SELECT change_set, may_follow_gap FROM staging.\(changesTable) ORDER BY revision")
            .map { row in
                var checked = try applier.check(ChangeSet(json: JSONParser.parse(Array((row[0] as String).utf8))))
                checked.mayFollowGap = row[1]
                return checked
            }
    }
}
