import Foundation
import GRDB
import SeedSyncModel

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
    /// (made at revision 0), and returns the history.
    static func prepare(_ db: Database) throws -> SchemaHistory {
        try db.execute(sql: createTable)
        if try Int.fetchOne(db, sql: "SELECT count(*) FROM _seedsync_schemas") == 0 {
            try insert(SchemaVersion(schema: LogState.schema(db), revision: 0, renames: []), in: db)
        }
        return try history(db)
    }

    /// Every version, oldest first.
    static func history(_ db: Database) throws -> SchemaHistory {
        let decoder = JSONDecoder()
        let versions = try Row.fetchAll(
            db, sql: "SELECT schema, revision, renames FROM _seedsync_schemas ORDER BY version"
        ).map { row in
            SchemaVersion(
                schema: try decoder.decode(DatasetSchema.self, from: Data((row[0] as String).utf8)),
                revision: row[1],
                renames: try decoder.decode([FieldRename].self, from: Data((row[2] as String).utf8)))
        }
        return try SchemaHistory(versions: versions)
    }

    /// Records `version` and makes its schema the state's.
    static func insert(_ version: SchemaVersion, in db: Database) throws {
        let encoder = JSONEncoder.stable()
        let schema = String(decoding: try encoder.encode(version.schema), as: UTF8.self)
        try db.execute(
            sql: "INSERT INTO _seedsync_schemas (version, revision, schema, renames) VALUES (?, ?, ?, ?)",
            arguments: [
                version.number, version.revision, schema,
                String(decoding: try encoder.encode(version.renames), as: UTF8.self),
            ])
        try db.execute(sql: "UPDATE _seedsync_state SET schema = ? WHERE id = 1", arguments: [schema])
    }
}
