import Foundation
import GRDB
import PostgresNIO
import SeedSyncModel
import SeedSyncPostgres
import SeedSyncSQLiteStore
import SeedSyncStore

/// Everything a store keeps, as text: each table of its file or database (the bookkeeping and the
/// served tables) with its definition and every row, and on PostgreSQL the triggers. Two dumps are
/// equal when nothing was changed: what "a refused upgrade changes nothing" is checked against.
///
/// ```swift
/// let before = try await StorageDump.of(store)
/// await #expect(throws: SchemaUpgradeError.self) { try await store.upgrade(to: broken, renaming: []) }
/// #expect(try await StorageDump.of(store) == before)
/// ```
public enum StorageDump {
    public static func of(_ store: any SyncStore) async throws -> [String: [String]] {
        if let postgres = store as? PostgresSyncStore { return try await of(postgres.location) }
        return try of(sqliteFile: (store as! SQLiteSyncStore).path)
    }

    /// Every object of the SQLite file at `path` and the rows of every table, read on a
    /// connection of its own.
    public static func of(sqliteFile path: String) throws -> [String: [String]] {
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        defer { try? queue.close() }
        return try queue.read { db in
            var dump: [String: [String]] = [:]
            let objects = try Row.fetchAll(
                db, sql: "SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name")
            dump["sqlite_master"] = objects.map { "\($0[0] as String) \($0[1] as String): \($0[2] as String? ?? "")" }
            for object in objects where (object[0] as String) == "table" {
                let name: String = object[1]
                dump[name] = try Row.fetchAll(db, sql: "SELECT * FROM \"\(name)\"").map(\.description).sorted()
            }
            return dump
        }
    }

    /// Every table of the schemas `seedsync` and `public` of the database at `location`, with its
    /// columns, defaults and rows, and every trigger.
    public static func of(_ location: PostgresLocation) async throws -> [String: [String]] {
        try await TestPostgres.withConnection(to: location) { connection, logger in
            var dump: [String: [String]] = [:]
            let columns = try await connection.query(
                """
                SELECT c.oid::regclass::text, a.attname::text || ' ' || format_type(a.atttypid, a.atttypmod)
                  || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END
                  || coalesce(' default ' || pg_get_expr(d.adbin, d.adrelid), '')
                FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
                LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
                WHERE n.nspname IN ('seedsync', 'public') AND c.relkind = 'r' ORDER BY 1, a.attnum
                """, logger: logger)
            var tables: [String] = []
            for try await (table, column) in columns.decode((String, String).self) {
                if dump["columns of \(table)"] == nil { tables.append(table) }
                dump["columns of \(table)", default: []].append(column)
            }
            for table in tables {
                var rows: [String] = []
                let query = PostgresQuery(unsafeSQL: "SELECT to_json(t)::text FROM \(table) t")
                for try await row in try await connection.query(query, logger: logger).decode(String.self) {
                    rows.append(row)
                }
                dump[table] = rows.sorted()
            }
            var triggers: [String] = []
            let query = PostgresQuery(
                unsafeSQL: """
                    SELECT tgrelid::regclass::text || ' ' || tgname::text || ' ' || tgenabled::text FROM pg_trigger
                    WHERE NOT tgisinternal ORDER BY 1
                    """)
            for try await trigger in try await connection.query(query, logger: logger).decode(String.self) {
                triggers.append(trigger)
            }
            dump["triggers"] = triggers
            return dump
        }
    }
}
