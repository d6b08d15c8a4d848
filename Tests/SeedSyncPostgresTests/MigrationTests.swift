import Foundation
import SeedSyncBuild
import SeedSyncClient
import SeedSyncDemo
import SeedSyncImport
import SeedSyncModel
import SeedSyncPostgres
import SeedSyncTesting
import Testing

/// A team's PostgreSQL tables changed by psql under a live server with apps syncing: an old app
/// keeps syncing through the change (no 503 for a column added), the upgrade is read from the
/// tables, and an app on the old version and one that migrates end up each equal to the server in
/// its version, the migrated one row by row equal to a fresh seed of the new version.
@Suite(.needsPostgres, .tags(.postgres)) struct PostgresMigrationTests {
    @Test func psqlChangesUnderALiveServerThenOldAndMigratedAppsSideBySide() async throws {
        try await StoreBackend.postgres.withDemoStore(events: 400, locations: 20, seed: 3) { store in
            let postgres = try #require(store as? PostgresSyncStore)
            try await ChangeGenerator.mutate(store, changes: 30, seed: 5)
            try await withLiveServer(store) { url in
                try await withTemporaryDirectory { directory in
                    let client = SyncClient(
                        configuration: .init(serverURL: url, token: liveServerToken, requestTimeout: 10, retry: .none))
                    let seed = directory.appendingPathComponent("v1.sqlite").path
                    _ = try await SeedBuilder(client: client, options: .init(output: seed)).build()
                    func importer(_ name: String, expecting version: Int? = nil, seed path: String = seed)
                        -> SeedImporter
                    {
                        SeedImporter(
                            configuration: .init(
                                seed: path, database: directory.appendingPathComponent("\(name)/app.sqlite").path,
                                server: .init(serverURL: url, token: liveServerToken, requestTimeout: 10, retry: .none),
                                expectedSchemaVersion: version))
                    }
                    let oldApp = importer("old", expecting: 1)
                    let newApp = importer("new")
                    try await oldApp.run()
                    try await newApp.run()
                    // A column added and written by psql: the apps keep syncing, without it.
                    try await psql(
                        "ALTER TABLE public.events ADD COLUMN notes text; UPDATE public.events SET notes = 'n' || id WHERE id % 7 = 0",
                        on: postgres.location)
                    #expect(try await oldApp.run().changeSets == 1)
                    #expect(try await newApp.run().schemaVersion == 1)
                    // The rest of the change, then the upgrade read from the tables.
                    try await psql(
                        DemoDataset.v2Alterations.replacingOccurrences(
                            of: "ALTER TABLE public.events ADD COLUMN notes text;", with: ""),
                        on: postgres.location)
                    let upgrade = try await postgres.upgradeFromTables(
                        adding: ["venues"], renaming: DemoDataset.v2Renames)
                    #expect(upgrade.version.schema == DemoDataset.schemaV2)
                    try await ChangeGenerator.mutate(store, changes: 30, seed: 6)

                    let old = try await oldApp.run()
                    #expect(old.schemaVersion == 1 && old.changeSets == 30)
                    let migrated = try await newApp.run()
                    #expect(migrated.migration?.toVersion == 2 && migrated.schemaVersion == 2)
                    let fresh = directory.appendingPathComponent("v2.sqlite").path
                    _ = try await SeedBuilder(client: client, options: .init(output: fresh)).build()
                    let server = try await Fixtures.contents(of: store)
                    #expect(try contents(ofSeed: directory.appendingPathComponent("new/app.sqlite").path) == server)
                    #expect(try contents(ofSeed: fresh) == server)
                    let notes = server["events"]?.filter { $0[7] != .null }.count ?? 0
                    #expect(notes > 0, "the column written before the upgrade came through")
                    // The old app equals the server in version 1 but for the dropped description,
                    // which it keeps where it had one.
                    let serverV1 = try await Fixtures.contents(of: store, version: 1)
                    let local = try contents(ofSeed: directory.appendingPathComponent("old/app.sqlite").path)
                    #expect(local["locations"] == serverV1["locations"])
                    #expect(local["events"]?.map { Array($0[0..<7]) } == serverV1["events"]?.map { Array($0[0..<7]) })
                }
            }
        }
    }
}
