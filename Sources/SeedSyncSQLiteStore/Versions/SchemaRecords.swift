import Foundation
import GRDB
import SeedSyncModel
import SeedSyncStore

/// `_seedsync_schemas`: every schema version of a server database, one row each.
enum SchemaRecords {
    static let createTable = """
        CREATE TABLE IF NOT EXISTS _seedsync_schemas (
          version INTEGER PRIMARY KEY NOT NULL,
          revision INTEGER NOT NULL,
          schema TEXT NOT NULL,
          renames TEXT NOT NULL
        )
        """

    /// Creates the table when the file predates it, with the state's schema as its one version
    /// (made at revision 0), and returns the versions.
    static func prepare(_ db: Database, path: String) throws -> ServedVersions {
        try db.execute(sql: createTable)
        if try Int.fetchOne(db, sql: "SELECT count(*) FROM _seedsync_schemas") == 0 {
            try insert(SchemaVersion(schema: LogState.schema(db), revision: 0, renames: []), in: db)
        }
        return try versions(db, path: path)
    }

    /// Every version, oldest first: the ones that read, and the unreadable ones after them
    /// (``SchemaHistory/read(_:)``).
    ///
    /// - Throws: ``StoreError`` `notAServerDatabase` when not even the first version reads.
    static func versions(_ db: Database, path: String) throws -> ServedVersions {
        let rows = try Row.fetchAll(
            db, sql: "SELECT version, revision, schema, renames FROM _seedsync_schemas ORDER BY version"
        ).map { row in StoredVersion(number: row[0], revision: row[1], schema: row[2], renames: row[3]) }
        do {
            return try ServedVersions.reading(rows)
        } catch {
            throw StoreError(
                .notAServerDatabase,
                "\(path) cannot be served: its first schema version cannot be read: \(error.reason)")
        }
    }

    /// Reads back the version `upgrade` wrote, as every server will read it, after the versions
    /// of `history` (read in the same transaction).
    ///
    /// - Throws: `SchemaUpgradeError` when it does not read back as written: the transaction is
    ///   rolled back, and the version is never stored.
    static func readBack(_ upgrade: SchemaUpgrade, after history: SchemaHistory, in db: Database) throws {
        let rows = try Row.fetchAll(
            db, sql: "SELECT version, revision, schema, renames FROM _seedsync_schemas WHERE version = ?",
            arguments: [upgrade.version.number])
        let stored = rows.map { StoredVersion(number: $0[0], revision: $0[1], schema: $0[2], renames: $0[3]) }
        try SchemaHistory.readBack(stored.first, of: upgrade, after: history)
    }

    /// Records `version` and makes its schema the state's.
    static func insert(_ version: SchemaVersion, in db: Database) throws {
        let stored = try StoredVersion(version)
        try db.execute(
            sql: "INSERT INTO _seedsync_schemas (version, revision, schema, renames) VALUES (?, ?, ?, ?)",
            arguments: [stored.number, stored.revision, stored.schema, stored.renames])
        try db.execute(sql: "UPDATE _seedsync_state SET schema = ? WHERE id = 1", arguments: [stored.schema])
    }
}
