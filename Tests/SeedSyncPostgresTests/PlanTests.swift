import Foundation
import PostgresNIO
import SeedSyncDemo
import SeedSyncModel
import SeedSyncPostgres
import SeedSyncTesting
import Testing

/// Reads cost what they return, not what the tables hold: executed, a snapshot page and a change
/// feed from the middle of the data touch about as many rows as they return.
@Suite(.needsPostgres, .tags(.postgres)) struct PlanTests {
    @Test func snapshotPagesAndChangeFeedsTouchWhatTheyReturn() async throws {
        try await StoreBackend.postgres.withDemoStore(events: 20_000, locations: 50) { store in
            try await ChangeGenerator.mutate(store, changes: 1_000, seed: 4)
            let location = try #require((store as? PostgresSyncStore)?.location)
            try await TestPostgres.withConnection(to: location) { connection, logger in
                try await connection.query("ANALYZE", logger: logger)
                let events = try #require(DemoDataset.schema.type(named: "events"))
                var page = PostgresBindings()
                var feed = PostgresBindings()
                page.append(Int64(10_000))
                page.append(Int64(101))
                feed.append(Int64(500))
                feed.append(Int64(520))
                let plans = [
                    (PostgresTableSQL(type: events, tableSchema: "public").snapshot(after: true), page),
                    (PostgresSyncStore.changeFeedSQL, feed),
                ]
                for (sql, binds) in plans {
                    var plan = ""
                    for try await line in try await connection.query(
                        PostgresQuery(unsafeSQL: "EXPLAIN (ANALYZE, TIMING OFF) " + sql, binds: binds), logger: logger
                    ).decode(String.self) {
                        plan += line + "\n"
                    }
                    // The most rows any node of the plan produced, over all its loops.
                    let touched = plan.matches(of: /rows=(\d+) loops=(\d+)/).map { Int($0.1)! * Int($0.2)! }.max() ?? 0
                    #expect(touched > 0 && touched <= 400, "\(plan)")
                }
            }
        }
    }
}
