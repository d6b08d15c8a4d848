import Foundation
import Logging
import PostgresNIO
import SeedSyncModel
import SeedSyncPostgres
import SeedSyncStore
import SeedSyncTesting

/// Tables a team might already have: every column type the store maps, a `varchar` key, a
/// foreign key, defaults, and a row in each.
let teamTables = """
    CREATE TABLE venues (
      code varchar(20) PRIMARY KEY,
      name text NOT NULL,
      opened timestamp,
      photo bytea
    );
    CREATE TABLE shows (
      id integer PRIMARY KEY,
      title varchar(200) NOT NULL,
      venue varchar(20) REFERENCES venues (code),
      price numeric(8, 2) NOT NULL,
      rating real,
      sold_out boolean NOT NULL DEFAULT false,
      starts_at timestamptz NOT NULL,
      seats smallint
    );
    INSERT INTO venues VALUES ('hall', 'Main Hall', '2001-02-03 04:05:06.5', '\\x0102ff');
    INSERT INTO shows VALUES (1, 'Opening', 'hall', 12.50, 0.1, false, '2026-01-01 20:00+01', 300);
    """

/// The schema `seed-server schema --tables venues,shows` prints for ``teamTables``.
let teamSchema = DatasetSchema(
    dataset: "shows", schemaVersion: 1,
    types: [
        EntityType(
            name: "venues", primaryKey: PrimaryKey(name: "code", type: .text),
            fields: [
                Field(name: "name", type: .text),
                Field(name: "opened", type: .timestamp, nullable: true),
                Field(name: "photo", type: .blob, nullable: true),
            ]),
        EntityType(
            name: "shows", primaryKey: PrimaryKey(name: "id", type: .integer),
            fields: [
                Field(name: "title", type: .text),
                Field(name: "venue", type: .text, nullable: true, references: "venues"),
                Field(name: "price", type: .real),
                Field(name: "rating", type: .real, nullable: true),
                Field(name: "sold_out", type: .boolean),
                Field(name: "starts_at", type: .timestamp),
                Field(name: "seats", type: .integer, nullable: true),
            ]),
    ])

/// Runs `body` with a new database holding `tables` (SQL), not yet attached.
func withTeamDatabase(
    _ tables: String = teamTables, _ body: @escaping @Sendable (PostgresLocation) async throws -> Void
) async throws {
    try await TestPostgres.withDatabase { location in
        try await TestPostgres.withConnection(to: location) { connection, logger in
            try await connection.execute(tables, logger: logger)
        }
        try await body(location)
    }
}

/// Runs `body` with ``teamTables`` attached and served by a store.
func withAttachedTeamTables(_ body: @escaping @Sendable (PostgresLocation, PostgresSyncStore) async throws -> Void)
    async throws
{
    try await withTeamDatabase { location in
        try await PostgresSyncStore.attach(at: location, schema: teamSchema)
        try await TestPostgres.withStore(at: location) { store in try await body(location, store) }
    }
}

/// Runs `sql` in a connection of its own, as psql or the team's application would.
func psql(_ sql: String, on location: PostgresLocation) async throws {
    try await TestPostgres.runScript(sql, on: location)
}

/// Every change set after `revision`, decoded, in schema version `version` (the newest when `nil`).
func changeSets(of store: any SyncStore, after revision: Int64, version: Int? = nil) async throws -> [ChangeSet] {
    var sets: [ChangeSet] = []
    var from = revision
    while true {
        let feed = try await store.changeFeed(after: from, limit: 100, byteBudget: 1 << 20, version: version)
        sets += try feed.changeSets.map { try ChangeSet(json: JSONParser.parse($0.json)) }
        from = feed.maxRevision
        if !feed.hasMore { return sets }
    }
}

/// The rows a client holds after applying `changeSets` to `start` (a type's rows by key: key,
/// fields in schema order, revision), as snapshot pages list them.
func replay(_ changeSets: [ChangeSet], onto start: [String: [[JSONValue]]], schema: DatasetSchema) -> [String:
    [[JSONValue]]]
{
    var tables = start.mapValues { rows in Dictionary(uniqueKeysWithValues: rows.map { ($0[0].keyString!, $0) }) }
    for changeSet in changeSets {
        for changes in changeSet.changes {
            let type = schema.type(named: changes.type)!
            for key in changes.delete { tables[changes.type]?[key.keyString!] = nil }
            for key in changes.create + changes.update {
                let attributes = changes.attributes[key.keyString!]!
                var row =
                    [key]
                    + type.fields.map { field in
                        attributes[field.name].flatMap { field.type == .real ? FieldType.real.normalize($0) ?? $0 : $0 }
                            ?? .null
                    }
                row.append(attributes["revision"] ?? .null)
                tables[changes.type, default: [:]][key.keyString!] = row
            }
        }
    }
    return tables.mapValues { rows in rows.values.sorted { JSONValue.keyPrecedes($0[0], $1[0]) } }
}
