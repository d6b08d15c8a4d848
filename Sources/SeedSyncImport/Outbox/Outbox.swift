import Foundation
import GRDB
import SeedSyncModel
import SeedSyncSQL

/// The app database's pending local edits: the outbox of change sets to push, and the server's
/// last known state of every row they touch (SEED-FORMAT.md §9.6).
///
/// Two tables, created by the first local write:
/// - `_seedsync_outbox`: one row per local change set, in the order it was written.
/// - `_seedsync_shadow`: for every row a pending change set touches, the server's state of it as
///   far as the app knows (its attributes and revision, or `NULL` when the server has no such
///   row, as for a row created locally). It is what the row goes back to when the change sets
///   that touch it are answered with a conflict or a rejection.
///
/// The invariant: a row touched by pending change sets holds the version the last of them wrote
/// (see ``recompute(_:entries:in:)``), until a change set from the server writes it (the server
/// wins; the pending change set then conflicts by its base revision). Every method runs inside
/// the caller's transaction.
struct Outbox: Sendable {
    let schema: DatasetSchema
    private let tables: [String: TableSQL]

    init(schema: DatasetSchema) {
        self.schema = schema
        tables = Dictionary(uniqueKeysWithValues: schema.types.map { ($0.name, TableSQL(type: $0)) })
    }

    static let outboxTable = "_seedsync_outbox"
    static let shadowTable = "_seedsync_shadow"

    /// The statements that create the two tables, exactly as SEED-FORMAT.md §9.6 gives them.
    static let createStatements = [
        "CREATE TABLE IF NOT EXISTS _seedsync_outbox (\n  position INTEGER PRIMARY KEY,\n  id TEXT NOT NULL UNIQUE,\n  change_set TEXT NOT NULL\n)",
        "CREATE TABLE IF NOT EXISTS _seedsync_shadow (\n  type TEXT NOT NULL,\n  key TEXT NOT NULL,\n  row TEXT,\n  PRIMARY KEY (type, key)\n) WITHOUT ROWID",
    ]

    static func create(in db: Database) throws {
        for statement in createStatements { try db.execute(sql: statement) }
    }

    /// Present while the importer replaces the database: a local write waits until it is gone
    /// (the replacing file has no such table), so it cannot commit to the old file after the
    /// outbox was read from it and be lost.
    static let replacingTable = "_seedsync_replacing"

    static func markReplacing(in db: Database) throws {
        try db.execute(sql: "CREATE TABLE IF NOT EXISTS _seedsync_replacing (started TEXT NOT NULL)")
        try db.execute(sql: "INSERT INTO _seedsync_replacing (started) VALUES (datetime('now'))")
    }

    static func unmarkReplacing(in db: Database) throws {
        try db.execute(sql: "DROP TABLE IF EXISTS _seedsync_replacing")
    }

    static func isMarkedReplacing(in db: Database) throws -> Bool {
        try db.tableExists(replacingTable)
    }

    static func exists(in db: Database) throws -> Bool {
        try db.tableExists(outboxTable)
    }

    // MARK: Entries

    /// The pending change sets, oldest first.
    func entries(in db: Database) throws -> [OutboxEntry] {
        guard try Self.exists(in: db) else { return [] }
        return try Row.fetchAll(db, sql: "SELECT position, id, change_set FROM _seedsync_outbox ORDER BY position").map
        { row in
            let text: String = row[2]
            let changeSet: ChangeSet
            do {
                changeSet = try ChangeSet(json: JSONParser.parse(Array(text.utf8)))
            } catch {
                throw ImportError(
                    .invalidDatabase,
                    "outbox entry \(row[1] as String) cannot be read (\(error)); the database was changed by something else than SeedSync"
                )
            }
            return OutboxEntry(position: row[0], id: row[1], changeSet: changeSet)
        }
    }

    static func count(in db: Database) throws -> Int {
        guard try exists(in: db) else { return 0 }
        return try Int.fetchOne(db, sql: "SELECT count(*) FROM _seedsync_outbox") ?? 0
    }

    func append(id: String, _ changeSet: ChangeSet, in db: Database) throws {
        try db.cachedStatement(
            sql:
                "INSERT INTO _seedsync_outbox (position, id, change_set) VALUES ((SELECT coalesce(max(position), 0) + 1 FROM _seedsync_outbox), ?, ?)"
        )
        .execute(arguments: [id, String(decoding: changeSet.jsonBytes(), as: UTF8.self)])
    }

    func save(_ entry: OutboxEntry, in db: Database) throws {
        try db.cachedStatement(sql: "UPDATE _seedsync_outbox SET id = ?, change_set = ? WHERE position = ?")
            .execute(arguments: [
                entry.id, String(decoding: entry.changeSet.jsonBytes(), as: UTF8.self), entry.position,
            ])
    }

    func remove(_ entry: OutboxEntry, in db: Database) throws {
        try db.cachedStatement(sql: "DELETE FROM _seedsync_outbox WHERE position = ?").execute(arguments: [
            entry.position
        ])
    }

    // MARK: Shadows

    /// The shadow of `row`: `nil` when there is none, `.some(nil)` when the server has no such row.
    func shadow(of row: RowID, in db: Database) throws -> [String: JSONValue]?? {
        guard
            let stored = try Row.fetchOne(
                try db.cachedStatement(sql: "SELECT row FROM _seedsync_shadow WHERE type = ? AND key = ?"),
                arguments: [row.type, row.key])
        else {
            return nil
        }
        let text: String? = stored[0]
        return .some(try text.map(Self.attributes))
    }

    func setShadow(of row: RowID, to attributes: [String: JSONValue]?, in db: Database) throws {
        let text = attributes.map(Self.text)
        try db.cachedStatement(
            sql:
                "INSERT INTO _seedsync_shadow (type, key, row) VALUES (?, ?, ?) ON CONFLICT (type, key) DO UPDATE SET row = excluded.row"
        )
        .execute(arguments: [row.type, row.key, text])
    }

    func removeShadow(of row: RowID, in db: Database) throws {
        try db.cachedStatement(sql: "DELETE FROM _seedsync_shadow WHERE type = ? AND key = ?").execute(arguments: [
            row.type, row.key,
        ])
    }

    /// Every shadowed row: the rows pending change sets touch.
    func shadowedRows(in db: Database) throws -> [RowID] {
        guard try Self.exists(in: db) else { return [] }
        return try Row.fetchAll(db, sql: "SELECT type, key FROM _seedsync_shadow").map {
            RowID(type: $0[0], key: $0[1])
        }
    }

    /// The shadowed rows the server does not have (`row` is `NULL`).
    func shadowsOfMissingRows(in db: Database) throws -> Set<RowID> {
        Set(
            try Row.fetchAll(db, sql: "SELECT type, key FROM _seedsync_shadow WHERE row IS NULL").map {
                RowID(type: $0[0], key: $0[1])
            })
    }

    /// Moves the shadow of a temporary key to its real key.
    func moveShadow(of row: RowID, to key: String, in db: Database) throws {
        try db.cachedStatement(sql: "UPDATE OR REPLACE _seedsync_shadow SET key = ? WHERE type = ? AND key = ?")
            .execute(arguments: [key, row.type, row.key])
    }

    private static func text(_ attributes: [String: JSONValue]) -> String {
        var writer = JSONWriter(capacity: 256)
        writer.value(.object(attributes))
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    private static func attributes(_ text: String) throws -> [String: JSONValue] {
        guard case .object(let members) = try? JSONParser.parse(Array(text.utf8)) else {
            throw ImportError(
                .invalidDatabase,
                "a row of _seedsync_shadow is not a JSON object; the database was changed by something else than SeedSync"
            )
        }
        return members
    }

    // MARK: Rows

    func type(_ name: String) throws -> EntityType {
        guard let type = schema.type(named: name) else {
            throw ImportError(
                .invalidChangeSet,
                "unknown type '\(name.clippedForMessage)'; the database has \(schema.types.map(\.name).joined(separator: ", "))"
            )
        }
        return type
    }

    /// The key of `row` as its type's key type.
    func key(of row: RowID) throws -> JSONValue {
        try type(row.type).primaryKey.type == .integer ? .int(Int64(row.key) ?? 0) : .string(row.key)
    }

    /// The row as attributes: its fields and `revision`; `nil` when there is no such row.
    func localRow(_ row: RowID, in db: Database) throws -> [String: JSONValue]? {
        let type = try type(row.type)
        guard
            let stored = try Row.fetchOne(
                try db.cachedStatement(sql: tables[type.name]!.row),
                arguments: [ValueMapping.databaseValue(key: try key(of: row))])
        else {
            return nil
        }
        let values = ValueMapping.jsonRow(stored, of: type)
        var attributes: [String: JSONValue] = [:]
        for (index, field) in type.fields.enumerated() { attributes[field.name] = values[index + 1] }
        attributes[SchemaNames.revisionColumn] = values[type.fields.count + 1]
        return attributes
    }

    /// Writes `row` with `attributes` (fields and `revision`), or deletes it when `nil`.
    ///
    /// - Throws: ``ImportError/Code/invalidChangeSet`` when the attributes do not fit the schema.
    func put(_ row: RowID, _ attributes: [String: JSONValue]?, in db: Database) throws {
        let type = try type(row.type)
        let table = tables[type.name]!
        let key = try key(of: row)
        guard let attributes else {
            try db.cachedStatement(sql: table.delete).execute(arguments: [ValueMapping.databaseValue(key: key)])
            return
        }
        var object = attributes
        object[type.primaryKey.name] = key
        let values: RowValues
        do {
            values = try type.validateRow(object)
        } catch {
            throw ImportError(.invalidChangeSet, "\(error)")
        }
        let revision = attributes[SchemaNames.revisionColumn]?.intValue ?? 0
        try StatementValues.execute(
            try db.cachedStatement(sql: table.upsert), row: values, of: type, revision: revision)
    }

    /// Writes `row` as the last pending change set that touches it left it, or as the server has
    /// it when none does (and then forgets its shadow).
    func recompute(_ row: RowID, entries: [OutboxEntry], in db: Database) throws {
        if let version = entries.last(where: { $0.version(of: row) != nil })?.version(of: row) {
            try put(row, version, in: db)
            return
        }
        guard let shadow = try shadow(of: row, in: db) else { return }
        try put(row, shadow, in: db)
        try removeShadow(of: row, in: db)
    }

    /// A temporary key for a new row of `type`: below every key of the table and every shadowed
    /// one (a pending change set may name a row a replaced database no longer has). When the
    /// smallest key is `Int64.min` (a server may hold such a row), the largest negative key no row
    /// and no shadow uses.
    ///
    /// - Throws: ``ImportError/Code/invalidChangeSet`` when every negative key is taken.
    func nextTemporaryKey(of type: EntityType, in db: Database) throws -> Int64 {
        let table = tables[type.name]!
        let smallest =
            try Int64.fetchOne(db, sql: "SELECT min(\(table.key)) FROM \(table.table)") ?? 0
        let shadowed =
            try Int64.fetchOne(
                try db.cachedStatement(sql: "SELECT min(CAST(key AS INTEGER)) FROM _seedsync_shadow WHERE type = ?"),
                arguments: [type.name]) ?? 0
        let below = min(smallest, shadowed, 0)
        if below > .min { return below - 1 }
        let free = try Int64.fetchOne(
            db,
            sql: """
                WITH used(k) AS (
                    SELECT \(table.key) FROM \(table.table) WHERE \(table.key) < 0
                    UNION SELECT CAST(key AS INTEGER) FROM _seedsync_shadow WHERE type = ? AND CAST(key AS INTEGER) < 0)
                SELECT c FROM (SELECT -1 AS c UNION ALL SELECT k - 1 FROM used WHERE k > -9223372036854775808)
                WHERE c NOT IN used ORDER BY c DESC LIMIT 1
                """, arguments: [type.name])
        guard let free else {
            throw ImportError(
                .invalidChangeSet,
                "no temporary key is left for a new row of \(type.name): every negative key is in use; sync, so that the server gives the new rows their keys, then write again"
            )
        }
        return free
    }

    // MARK: References

    /// The first broken reference that involves `row`: the row exists and one of its reference
    /// fields names a missing row, or it is missing and another row references it.
    func brokenReference(of row: RowID, in db: Database) throws -> String? {
        let type = try type(row.type)
        if let attributes = try localRow(row, in: db) {
            for field in type.fields {
                guard let target = field.references, let key = attributes[field.name], key != .null,
                    try !exists(RowID(type: target, key: key.keyString ?? ""), in: db)
                else { continue }
                return
                    "\(row.type)[\(row.key)].\(field.name) references \(target)[\(key.keyString ?? "?")], which does not exist"
            }
            return nil
        }
        for referrer in schema.types {
            for field in referrer.fields where field.references == type.name {
                let table = tables[referrer.name]!
                let sql = "SELECT \(table.key) FROM \(table.table) WHERE \(quote(field.name)) = ? LIMIT 1"
                guard
                    let found = try DatabaseValue.fetchOne(
                        try db.cachedStatement(sql: sql), arguments: [ValueMapping.databaseValue(key: try key(of: row))]
                    )
                else { continue }
                return
                    "\(row.type)[\(row.key)] does not exist, but \(referrer.name)[\(ValueMapping.jsonKey(found).keyString ?? "?")].\(field.name) references it"
            }
        }
        return nil
    }

    private func exists(_ row: RowID, in db: Database) throws -> Bool {
        let table = tables[row.type]!
        return try Row.fetchOne(
            try db.cachedStatement(sql: table.exists), arguments: [ValueMapping.databaseValue(key: try key(of: row))])
            != nil
    }
}
