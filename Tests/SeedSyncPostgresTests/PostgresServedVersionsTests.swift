import Foundation
import PostgresNIO
import SeedSyncModel
import SeedSyncPostgres
import SeedSyncTesting
import Testing

/// The PostgreSQL store's served versions only move forward in memory (the SQLite store's variant
/// is SeedSyncStoreTests' `ServedVersionsTests`): a connection whose snapshot predates an upgrade
/// reads the older history for itself, and the store keeps serving the newer one.
@Suite(.needsPostgres, .tags(.postgres)) struct PostgresServedVersionsTests {
    @Test func aReadBegunBeforeAnUpgradeLeavesTheNewerVersionServed() async throws {
        try await StoreBackend.postgres.withStore { store in
            let store = store as! PostgresSyncStore
            try await store.commit(Fixtures.catalogCreation())
            try await store.withConnection { connection in
                // The snapshot is taken by the first statement: before the upgrade, on no table.
                _ = try await store.query("BEGIN ISOLATION LEVEL REPEATABLE READ", on: connection)
                _ = try await store.query("SELECT 1", on: connection)
                try await StoreBackend.postgres.upgrade(
                    store, to: Fixtures.catalogSchemaV4, renaming: Fixtures.catalogRenames,
                    alterations: Fixtures.catalogAlterations)
                #expect(store.schema == Fixtures.catalogSchemaV4)

                let old = try await store.served(newest: 3, on: connection)
                _ = try await store.query("ROLLBACK", on: connection)
                #expect(old.versions.history.newest.number == 3, "the old snapshot gets its own history")
                #expect(store.schema == Fixtures.catalogSchemaV4, "memory keeps the newer one")
            }
        }
    }
}
