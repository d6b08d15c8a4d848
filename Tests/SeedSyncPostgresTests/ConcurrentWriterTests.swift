import Foundation
import PostgresNIO
import SeedSyncModel
import SeedSyncPostgres
import SeedSyncTesting
import Testing

/// Many writers at once, through the store and straight through SQL: one revision per
/// transaction, in commit order, no gaps, and the log replays to the tables.
@Suite(.needsPostgres, .tags(.postgres)) struct ConcurrentWriterTests {
    @Test func sqlWritersAndStoreCommitsShareOneGapFreeLog() async throws {
        try await withAttachedTeamTables { location, store in
            let sqlWriters = 6
            let storeWriters = 2
            let transactions = 20
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<sqlWriters {
                    group.addTask {
                        try await Self.writeThroughSQL(writer: writer, transactions: transactions, location: location)
                    }
                }
                for writer in 0..<storeWriters {
                    group.addTask {
                        for index in 0..<transactions {
                            let code = JSONValue.string("s\(writer)-\(index)")
                            try await store.commit(
                                ChangeSet(changes: [
                                    TypeChanges(
                                        type: "venues", create: [code],
                                        attributes: [code.keyString!: ["name": "Store venue"]]),
                                    TypeChanges(
                                        type: "shows", create: [.int(Int64(10_000 + writer * 100 + index))],
                                        attributes: [
                                            "\(10_000 + writer * 100 + index)": [
                                                "title": "Show", "venue": code, "price": 3.25, "sold_out": false,
                                                "starts_at": "2026-03-01T10:00:00Z",
                                            ]
                                        ]),
                                ]))
                        }
                    }
                }
                try await group.waitForAll()
            }
            let info = try await store.schemaInfo()
            // Each SQL writer's transactions: one insert pair, then every third an update, every
            // fifth a rollback (no revision).
            let sqlRevisions = (0..<transactions).filter { $0 % 5 != 4 }.count * sqlWriters
            #expect(info.revision == 1 + Int64(sqlRevisions + storeWriters * transactions))
            let sets = try await changeSets(of: store, after: 1)
            #expect(sets.map(\.revision) == Array(2...info.revision))
            #expect(sets.allSatisfy { !$0.changes.isEmpty })
            let start: [String: [[JSONValue]]] = [
                "venues": [["hall", "Main Hall", "2001-02-03T04:05:06.5Z", "AQL/", 1]],
                "shows": [[1, "Opening", "hall", 12.5, 0.1, false, "2026-01-01T19:00:00Z", 300, 1]],
            ]
            #expect(replay(sets, onto: start, schema: teamSchema) == (try await Fixtures.contents(of: store)))
        }
    }

    /// One connection's transactions, as the team's application would write them.
    static func writeThroughSQL(writer: Int, transactions: Int, location: PostgresLocation) async throws {
        try await TestPostgres.withConnection(to: location) { connection, logger in
            for index in 0..<transactions {
                let id = writer * 1_000 + index + 100
                let end = index % 5 == 4 ? "ROLLBACK" : "COMMIT"
                var script = "BEGIN; INSERT INTO venues VALUES ('w\(writer)-\(index)', 'Venue \(index)');"
                script +=
                    "INSERT INTO shows (id, title, venue, price, starts_at) VALUES (\(id), 'Show', 'w\(writer)-\(index)', \(index).5, now());"
                if index % 3 == 2 { script += "UPDATE shows SET seats = \(index) WHERE id = \(id - 1);" }
                try await connection.execute(script + end, logger: logger)
            }
        }
    }
}
