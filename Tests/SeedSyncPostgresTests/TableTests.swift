import Foundation
import PostgresNIO
import SeedSyncModel
import SeedSyncPostgres
import SeedSyncTesting
import Testing

/// Attaching existing tables: the schema printed for them, every mismatch refused by name, and a
/// table changed under a running store reported, never served wrong.
@Suite(.needsPostgres, .tags(.postgres)) struct TableTests {
    @Test func schemaIsReadFromTheCatalog() async throws {
        try await withTeamDatabase { location in
            let schema = try await PostgresSyncStore.schema(
                at: location, tables: ["venues", "shows"], dataset: "shows")
            #expect(schema == teamSchema)
            await #expect {
                try await PostgresSyncStore.schema(at: location, tables: ["venues", "missing"], dataset: "shows")
            } throws: { ($0 as? PostgresStoreError)?.code == .tableMismatch && "\($0)".contains("public.missing") }
        }
    }

    @Test(arguments: [
        ("ALTER TABLE shows ADD COLUMN notes text", "public.shows has a column notes the schema does not name"),
        ("ALTER TABLE shows DROP COLUMN seats", "public.shows has no column seats"),
        (
            "ALTER TABLE shows ALTER COLUMN seats TYPE text",
            "public.shows.seats is text, which cannot hold a integer field"
        ),
        ("ALTER TABLE shows ALTER COLUMN title DROP NOT NULL", "public.shows.title allows NULL"),
        ("ALTER TABLE shows DROP CONSTRAINT shows_pkey", "public.shows: the primary key must be the column id alone"),
        ("ALTER TABLE venues RENAME TO places", "there is no table public.venues"),
        (
            "ALTER TABLE shows ALTER COLUMN id TYPE bigint; INSERT INTO shows VALUES (4611686018427387904, 'Last', 'hall', 1, NULL, false, '2026-01-01 20:00+01', 1)",
            "holds the key 4611686018427387904: integer keys end at 4611686018427387903"
        ),
        (
            "INSERT INTO shows VALUES (-3, 'Temporary', 'hall', 1, NULL, false, '2026-01-01 20:00+01', 1)",
            "holds the key -3: integer keys of stored rows are 0 or more"
        ),
    ])
    func attachRefusesTablesThatDoNotMatchAndChangesNothing(change: String, message: String) async throws {
        try await withTeamDatabase(teamTables + ";" + change) { location in
            await #expect {
                try await PostgresSyncStore.attach(at: location, schema: teamSchema)
            } throws: { error in
                (error as? PostgresStoreError)?.code == .tableMismatch && "\(error)".contains(message)
            }
            try await TestPostgres.withConnection(to: location) { connection, logger in
                let rows = try await connection.query(
                    "SELECT count(*) FROM pg_namespace WHERE nspname = 'seedsync'", logger: logger)
                for try await count in rows.decode(Int64.self) { #expect(count == 0) }
                let triggers = try await connection.query(
                    "SELECT count(*) FROM pg_trigger WHERE NOT tgisinternal", logger: logger)
                for try await count in triggers.decode(Int64.self) { #expect(count == 0) }
            }
        }
    }

    @Test func attachingTwiceAndCreatingOverExistingTablesAreRefused() async throws {
        try await withTeamDatabase { location in
            try await PostgresSyncStore.attach(at: location, schema: teamSchema)
            await #expect { try await PostgresSyncStore.attach(at: location, schema: teamSchema) } throws: {
                ($0 as? PostgresStoreError)?.code == .alreadyInitialized
            }
        }
        try await withTeamDatabase { location in
            await #expect { try await PostgresSyncStore.create(at: location, schema: teamSchema) } throws: {
                ($0 as? PostgresStoreError)?.code == .alreadyInitialized
                    && "\($0)".contains("attach the existing tables")
            }
        }
    }

    /// A column added by psql under a running store: never a 503, not served until the schema is
    /// upgraded from the tables; then it flows in the new version from the rows written since the
    /// `ALTER`, while version 1 goes on without it. Dropped again, it leaves no client stuck.
    @Test func aColumnAddedUnderTheStoreFlowsOnceUpgradedAndDroppedAgainStrandsNoOne() async throws {
        try await withAttachedTeamTables { location, store in
            try await psql("UPDATE shows SET seats = 1", on: location)
            try await psql(
                "ALTER TABLE shows ADD COLUMN notes text; UPDATE shows SET seats = 2, notes = 'x'", on: location)
            let before = try await changeSets(of: store, after: 1)
            #expect(before.map { $0["shows"]?.attributes["1"]?["notes"] } == [nil, nil])
            #expect(try await store.snapshotPage(of: "shows", after: nil, limit: 10).columns.contains("notes") == false)
            // A server starting on the changed table starts.
            try await TestPostgres.withStore(at: location) { _ in }
            let upgrade = try await store.upgradeFromTables()
            #expect(upgrade.changes == [.fieldAdded(type: "shows", field: "notes")] && upgrade.version.revision == 3)
            let v2 = try await changeSets(of: store, after: 1, version: 2)
            #expect(v2.map { $0["shows"]?.attributes["1"]?["notes"] } == [.null, "x"])
            #expect(try await changeSets(of: store, after: 1, version: 1) == before)
            // Dropped again: version 1 never notices, version 2 waits for the upgrade that drops it.
            try await psql("ALTER TABLE shows DROP COLUMN notes; UPDATE shows SET seats = 3", on: location)
            #expect(try await changeSets(of: store, after: 3, version: 1).count == 1)
            await #expect { try await changeSets(of: store, after: 3, version: 2) } throws: {
                ($0 as? SyncStoreError)?.code == .schemaMismatch && "\($0)".contains("notes")
            }
            let restarted = try await TestPostgres.withStore(at: location) { restarted in
                try await changeSets(of: restarted, after: 3, version: 1).count
            }
            #expect(restarted == 1)
            #expect(try await store.upgradeFromTables().changes == [.fieldDropped(type: "shows", field: "notes")])
            #expect(
                try await changeSets(of: store, after: 3, version: 2).first?["shows"]?.attributes["1"]?["notes"]
                    == .null)
            #expect(try await store.snapshotPage(of: "shows", after: nil, limit: 10, version: 2).rows[0][8] == .null)
        }
    }

    /// A column renamed or dropped by psql cannot be served in the version that has it until the
    /// upgrade says what happened; then both versions read every revision.
    @Test func aRenamedOrDroppedColumnIsServedOnceUpgraded() async throws {
        try await withAttachedTeamTables { location, store in
            try await psql("ALTER TABLE shows RENAME COLUMN title TO name; UPDATE shows SET seats = 2", on: location)
            await #expect { try await changeSets(of: store, after: 1) } throws: {
                ($0 as? SyncStoreError)?.code == .schemaMismatch && "\($0)".contains("title")
            }
            await #expect { try await store.snapshotPage(of: "shows", after: nil, limit: 10) } throws: {
                ($0 as? SyncStoreError)?.code == .schemaMismatch && "\($0)".contains("title")
            }
            // Without the rename stated, name would be a new column without a default: refused, with the hint.
            await #expect { try await store.upgradeFromTables() } throws: {
                ($0 as? PostgresStoreError)?.code == .tableMismatch && "\($0)".contains("public.shows.name")
                    && "\($0)".contains("If it is shows.title renamed, state the rename")
            }
            _ = try await store.upgradeFromTables(renaming: [FieldRename("shows.title=name")!])
            #expect(
                try await changeSets(of: store, after: 1, version: 1).first?["shows"]?.attributes["1"]?["title"]
                    == "Opening")
            #expect(
                try await changeSets(of: store, after: 1, version: 2).first?["shows"]?.attributes["1"]?["name"]
                    == "Opening")
            try await psql("ALTER TABLE shows DROP COLUMN rating; UPDATE shows SET seats = 3", on: location)
            let upgrade = try await store.upgradeFromTables()
            #expect(upgrade.changes == [.fieldDropped(type: "shows", field: "rating")] && upgrade.version.number == 3)
            #expect(
                try await changeSets(of: store, after: 2, version: 1).first?["shows"]?.attributes["1"]?["rating"]
                    == .null)
            #expect(
                try await changeSets(of: store, after: 2, version: 3).first?["shows"]?.attributes["1"]?.keys.contains(
                    "rating") == false)
        }
    }

    /// A new column's default is what its rows hold; a column whose rows logged before it hold
    /// different values (a volatile default) is refused, and so is a table without the upgrade's shape.
    @Test func columnDefaultsAndMissingColumnsOnUpgrade() async throws {
        try await withAttachedTeamTables { location, store in
            try await psql(
                """
                INSERT INTO shows VALUES (2, 'Late', 'hall', 5, NULL, false, '2026-01-02 22:00+00', 10);
                UPDATE shows SET seats = 301 WHERE id = 1;
                ALTER TABLE shows ADD COLUMN made timestamptz NOT NULL DEFAULT clock_timestamp()
                """, on: location)
            await #expect { try await store.upgradeFromTables() } throws: {
                ($0 as? PostgresStoreError)?.code == .tableMismatch && "\($0)".contains("public.shows.made")
                    && "\($0)".contains("holds different values") && "\($0)".contains("UPDATE public.shows SET made")
            }
            try await psql(
                """
                ALTER TABLE shows DROP COLUMN made;
                ALTER TABLE shows ADD COLUMN status text NOT NULL DEFAULT 'it''s on', ADD COLUMN hall integer DEFAULT -4
                """, on: location)
            let upgrade = try await store.upgradeFromTables(schemaVersion: 7)
            let shows = try #require(upgrade.version.schema.type(named: "shows"))
            #expect(shows.field(named: "status")?.default == "it's on" && shows.field(named: "hall")?.default == -4)
            #expect(upgrade.version.number == 7)
            // A schema file whose default for a new column is not what the rows logged before it hold
            // is refused, saying what they hold.
            try await psql("ALTER TABLE shows ADD COLUMN tier integer NOT NULL DEFAULT 5", on: location)
            var wrongDefault = upgrade.version.schema
            wrongDefault.schemaVersion = 8
            wrongDefault.types[1].fields.append(Field(name: "tier", type: .integer, default: 7))
            await #expect { try await store.upgrade(to: wrongDefault) } throws: {
                ($0 as? PostgresStoreError)?.code == .tableMismatch && "\($0)".contains("public.shows.tier")
                    && "\($0)".contains("hold 5") && "\($0)".contains("the default 7")
            }
            try await psql("ALTER TABLE shows DROP COLUMN tier", on: location)
            // A schema file naming a column the table lacks is refused, and nothing changes.
            var missing = upgrade.version.schema
            missing.schemaVersion = 8
            missing.types[1].fields.append(Field(name: "extra", type: .text, nullable: true))
            await #expect { try await store.upgrade(to: missing) } throws: {
                ($0 as? PostgresStoreError)?.code == .tableMismatch && "\($0)".contains("extra")
            }
            #expect(try await store.schemaHistory().versions.map(\.number) == [1, 7])
        }
    }

    /// A capture trigger switched off: the server starts and serves the other tables; the table is
    /// refused (writes to it may have gone unlogged) until `reattach` takes it back.
    @Test func disabledCaptureTriggersMakeTheTableUnavailableNotTheServer() async throws {
        try await withAttachedTeamTables { location, _ in
            try await psql("ALTER TABLE venues DISABLE TRIGGER seedsync_insert", on: location)
            try await TestPostgres.withStore(at: location) { store in
                await #expect { try await store.snapshotPage(of: "venues", after: nil, limit: 10) } throws: {
                    ($0 as? SyncStoreError)?.code == .schemaMismatch
                        && "\($0)".contains("public.venues has lost its capture triggers")
                        && "\($0)".contains("seed-server schema reattach --tables venues")
                }
                #expect(try await store.snapshotPage(of: "shows", after: nil, limit: 10).rows.count == 1)
                _ = try await store.reattach(["venues"])
                #expect(try await store.snapshotPage(of: "venues", after: nil, limit: 10).rows.count == 1)
            }
        }
    }
}
