import Foundation
import Logging
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
                try await Self.expectTouched(atMost: 400, plans, on: connection, logger: logger)
            }
        }
    }

    /// A team's reads on a dataset of 200 teams: its page and count use the (scope, key) index
    /// the store made, its log read the log's scope indexes; each touches about the team's rows.
    @Test func aTeamsPagesCountsAndLogTouchTheTeamsRowsAlone() async throws {
        try await StoreBackend.postgres.withStore(Fixtures.clubsSchema) { store in
            try await store.commit(Fixtures.clubsCreation(teams: 1...200, eventsPerTeam: 20))
            for index in Int64(0)..<400 {
                let team = index % 200 + 1
                let event = team * 100 + index % 20 + 1
                try await store.commit(Fixtures.clubsRetitle(event, team: team, "edit \(index)"))
            }
            let location = try #require((store as? PostgresSyncStore)?.location)
            try await TestPostgres.withConnection(to: location) { connection, logger in
                try await connection.query("ANALYZE", logger: logger)
                let events = PostgresTableSQL(
                    type: try #require(Fixtures.clubsSchema.type(named: "events")), tableSchema: "public")
                var page = PostgresBindings()
                page.append([Int64(7)])
                page.append(Int64(11))
                var count = PostgresBindings()
                count.append([Int64(7)])
                var log = PostgresBindings()
                log.append(Int64(1))
                log.append(Int64.max)
                log.append(["7"])
                log.append(Int64(1000))
                try await Self.expectTouched(
                    atMost: 60,
                    [
                        (events.snapshot(after: false, scoped: true), page),
                        (events.count(scoped: true), count),
                        (PostgresSyncStore.scopedRevisionsSQL, log),
                    ], on: connection, logger: logger)
            }
        }
    }

    /// The rows scans of the store's and the team's tables read and dropped by a filter (not those
    /// of the catalog, which the health check reads).
    static func droppedRows(_ plan: String) -> Int {
        var dropped = 0
        var catalog = false
        for line in plan.split(separator: "\n") {
            if let scan = line.firstMatch(of: /Scan.* on (\S+)/) { catalog = scan.1.hasPrefix("pg_") }
            if let removed = line.firstMatch(of: /Rows Removed by Filter: (\d+)/), !catalog {
                dropped += Int(removed.1)!
            }
        }
        return dropped
    }

    /// Runs each statement under `EXPLAIN ANALYZE`: the most rows any node of its plan produced,
    /// over all its loops, plus the rows its scans dropped (``droppedRows(_:)``), is at least one
    /// and at most `limit`.
    static func expectTouched(
        atMost limit: Int, _ plans: [(String, PostgresBindings)], on connection: PostgresConnection, logger: Logger
    ) async throws {
        for (sql, binds) in plans {
            var plan = ""
            for try await line in try await connection.query(
                PostgresQuery(unsafeSQL: "EXPLAIN (ANALYZE, TIMING OFF) " + sql, binds: binds), logger: logger
            ).decode(String.self) {
                plan += line + "\n"
            }
            let produced = plan.matches(of: /rows=(\d+) loops=(\d+)/).map { Int($0.1)! * Int($0.2)! }.max() ?? 0
            let touched = produced + Self.droppedRows(plan)
            #expect(touched > 0 && touched <= limit, "\(plan)")
        }
    }
}
