import Foundation
import NIOConcurrencyHelpers
import SeedSyncBuild
import SeedSyncClient
import SeedSyncDemo
import SeedSyncImport
import SeedSyncModel
import SeedSyncSeed
import SeedSyncTesting
import Testing

/// Seeds and app databases from a PostgreSQL-backed server: equal to the tables row by row, and
/// byte for byte the seed an SQLite-backed server with the same history gives.
@Suite(.needsPostgres, .tags(.postgres)) struct SeedTests {
    @Test func bothStoresGiveTheSameSeedAndImportsEqualTheTables() async throws {
        let digests = NIOLockedValueBox<[StoreBackend: String]>([:])
        for backend in StoreBackend.tested {
            try await backend.withDemoStore(events: 300, locations: 20, seed: 3) { store in
                try await ChangeGenerator.mutate(store, changes: 40, seed: 5)
                try await withLiveServer(store) { url in
                    try await withTemporaryDirectory { directory in
                        let client = SyncClient(
                            configuration: .init(
                                serverURL: url, token: liveServerToken, requestTimeout: 10, retry: .none))
                        let seed = directory.appendingPathComponent("seed.sqlite").path
                        let report = try await SeedBuilder(
                            client: client, options: .init(output: seed, pageSize: 47, syncLimit: 7)
                        ).build()
                        #expect(try contents(ofSeed: seed) == (try await Fixtures.contents(of: store)), "\(backend)")
                        // The anchor is the store's chain, the same on both (the demo's starts alike).
                        let revision = report.manifest.revision
                        let anchor = try await store.historyChains(from: revision, through: revision)[revision]
                        #expect(try SeedFile(path: seed).metadata().chain == anchor)
                        digests.withLockedValue { $0[backend] = report.manifest.sha256 }

                        try await ChangeGenerator.mutate(store, changes: 30, seed: 6)
                        let database = directory.appendingPathComponent("app/app.sqlite").path
                        let importer = SeedImporter(
                            configuration: .init(
                                seed: seed, database: database,
                                server: .init(serverURL: url, token: liveServerToken, requestTimeout: 10, retry: .none),
                                syncLimit: 9
                            ))
                        let imported = try await importer.run()
                        #expect(imported.changeSets == 30, "\(backend)")
                        #expect(
                            try contents(ofSeed: database) == (try await Fixtures.contents(of: store)), "\(backend)")
                    }
                }
            }
        }
        let both = digests.withLockedValue { $0 }
        #expect(both.count == 2 && Set(both.values).count == 1, "seed SHA-256 per store: \(both)")
    }
}
