import Foundation
import SeedSyncModel
import SeedSyncSQLiteStore
import SeedSyncStore
import SeedSyncTesting
import Testing

/// The versions a store serves only move forward in memory: a read whose transaction began before
/// an upgrade sees the older history, and the store keeps serving the newer one it already knew.
/// Were it put back, the next requests' change sets would be projected (and cached) in the older
/// shape. The PostgreSQL store's variant is in SeedSyncPostgresTests.
@Suite struct ServedVersionsTests {
    @Test func aReadBegunBeforeAnUpgradeLeavesTheNewerVersionServed() async throws {
        try await StoreBackend.sqlite.withStore { store in
            let store = store as! SQLiteSyncStore
            try await store.commit(Fixtures.catalogCreation())
            let before = try store.pool.makeSnapshot()  // a read transaction at version 3
            _ = try await store.upgrade(to: Fixtures.catalogSchemaV4, renaming: Fixtures.catalogRenames)
            #expect(store.schema == Fixtures.catalogSchemaV4)

            let old = try await before.read { db in try store.served(db) }
            #expect(old.versions.history.newest.number == 3, "the old read gets its own history")
            #expect(store.schema == Fixtures.catalogSchemaV4, "memory keeps the newer one")
            let changeSets = try await store.changeFeed(after: 0, limit: 10, byteBudget: 1 << 20, version: nil)
            #expect(String(decoding: changeSets.changeSets[0].json, as: UTF8.self).contains("country"))
        }
    }
}
