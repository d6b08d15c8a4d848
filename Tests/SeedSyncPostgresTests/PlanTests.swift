import Foundation
import PostgresNIO
import SeedSyncDemo
import SeedSyncModel
@testable import SeedSyncPostgres
import SeedSyncTesting
import Testing

/// Reads cost what they return, not what the tables hold: PostgreSQL's plans for a snapshot page
/// and a change feed use the indexes, never a scan of a whole table.
@Suite struct PlanTests {
    @Test func snapshotPagesAndChangeFeedsUseIndexes() async throws {
        try await StoreBackend.postgres.withDemoStore(events: 20_000, locations: 50) { store in
            try await ChangeGenerator.mutate(store, changes: 300, seed: 4)
            let location = try #require((store as? PostgresSyncStore)?.location)
            try await TestPostgres.withConnection(to: location) { connection, logger in
                try await connection.query("ANALYZE", logger: logger)
                let events = try #require(DemoDataset.schema.type(named: "events"))
                var page = PostgresBindings(), feed = PostgresBindings()
                page.append(Int64(10_000)); page.append(Int64(101))
                feed.append(Int64(250)); feed.append(Int64(350))
                let plans = [
                    (PostgresTableSQL(type: events, tableSchema: "public").snapshot(after: true), page),
                    (PostgresSyncStore.changeFeedSQL, feed),
                ]
                for (sql, binds) in plans {
                    var plan = ""
                    for try await line in try await connection.query(PostgresQuery(unsafeSQL: "EXPLAIN " + sql, binds: binds), logger: logger).decode(String.self) {
                        plan += line + "\n"
                    }
                    #expect(!plan.contains("Seq Scan on events") && !plan.contains("Seq Scan on _rows_events") && !plan.contains("Seq Scan on _changes"), "\(plan)")
                }
            }
        }
    }
}
