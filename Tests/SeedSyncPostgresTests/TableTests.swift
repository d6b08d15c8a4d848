import Foundation
import PostgresNIO
import SeedSyncModel
import SeedSyncPostgres
import SeedSyncTesting
import Testing

/// Attaching existing tables: the schema printed for them, every mismatch refused by name, and a
/// table changed under a running store reported, never served wrong.
@Suite struct TableTests {
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

    @Test(arguments: [
        ("ALTER TABLE shows ADD COLUMN notes text", "notes"),
        ("ALTER TABLE shows DROP COLUMN rating", "rating"),
    ])
    func aColumnChangedUnderTheStoreIsReportedNotServed(change: String, column: String) async throws {
        try await withAttachedTeamTables { location, store in
            try await psql("UPDATE shows SET seats = 1", on: location)
            try await psql(change, on: location)
            try await psql("UPDATE shows SET seats = 2", on: location)
            // The change set written before the column changed is served; the one after is not.
            #expect(try await store.changeFeed(after: 1, limit: 1, byteBudget: 1 << 20).changeSets.count == 1)
            await #expect { try await store.changeFeed(after: 2, limit: 10, byteBudget: 1 << 20) } throws: {
                ($0 as? SyncStoreError)?.code == .schemaMismatch && "\($0)".contains(column)
            }
            await #expect { try await store.snapshotPage(of: "shows", after: nil, limit: 10) } throws: {
                ($0 as? SyncStoreError)?.code == .schemaMismatch && "\($0)".contains(column)
            }
            // A server starting on the changed table refuses to, naming it.
            await #expect { try await PostgresSyncStore.withStore(at: location) { _ in } } throws: {
                ($0 as? PostgresStoreError)?.code == .tableMismatch && "\($0)".contains("public.shows")
                    && "\($0)".contains(column)
            }
        }
    }

    @Test func disabledCaptureTriggersStopTheServerFromStarting() async throws {
        try await withAttachedTeamTables { location, _ in
            try await psql("ALTER TABLE venues DISABLE TRIGGER seedsync_insert", on: location)
            await #expect { try await PostgresSyncStore.withStore(at: location) { _ in } } throws: {
                ($0 as? PostgresStoreError)?.code == .tableMismatch && "\($0)".contains("public.venues")
            }
        }
    }
}
