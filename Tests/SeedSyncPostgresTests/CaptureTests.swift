import Foundation
import NIOConcurrencyHelpers
import PostgresNIO
import SeedSyncModel
import SeedSyncPostgres
import SeedSyncTesting
import Testing

/// Writes by other programs (psql, the team's application) to attached tables become change sets.
@Suite(.needsPostgres, .tags(.postgres)) struct CaptureTests {
    @Test func attachAdoptsTheRowsAsOneBulkRevisionAndMapsEveryColumnType() async throws {
        try await withAttachedTeamTables { _, store in
            let info = try await store.schemaInfo()
            #expect(info.revision == 1 && info.minRevision == 1)
            #expect(info.rowCounts == ["venues": 1, "shows": 1])
            let contents = try await Fixtures.contents(of: store)
            #expect(contents["venues"] == [["hall", "Main Hall", "2001-02-03T04:05:06.5Z", "AQL/", 1]])
            #expect(contents["shows"] == [[1, "Opening", "hall", 12.5, 0.1, false, "2026-01-01T19:00:00Z", 300, 1]])
        }
    }

    @Test func oneTransactionIsOneRevisionHoldingEveryRowItChanged() async throws {
        try await withAttachedTeamTables { location, store in
            try await psql(
                """
                BEGIN;
                INSERT INTO venues VALUES ('club', 'Club', NULL, NULL);
                INSERT INTO shows (id, title, venue, price, starts_at) VALUES (2, 'Late', 'club', 5, '2026-01-02T23:30:00.123456Z');
                UPDATE shows SET seats = 250, rating = 4.5 WHERE id = 1;
                UPDATE shows SET title = 'Late show' WHERE id = 2;
                COMMIT
                """, on: location)
            try await psql(
                "BEGIN; INSERT INTO venues VALUES ('tent', 'Tent'); DELETE FROM venues WHERE code = 'tent'; COMMIT",
                on: location)
            try await psql("DELETE FROM shows WHERE id = 2", on: location)
            let sets = try await changeSets(of: store, after: 1)
            #expect(sets.map(\.revision) == [2, 3, 4])
            #expect(sets[0].types == ["venues", "shows"])
            #expect(sets[0]["venues"]?.create == ["club"])
            #expect(
                sets[0]["venues"]?.attributes["club"] == [
                    "name": "Club", "opened": .null, "photo": .null, "revision": 2,
                ])
            #expect(sets[0]["shows"]?.create == [2] && sets[0]["shows"]?.update == [1])
            #expect(
                sets[0]["shows"]?.attributes["2"]?["title"] == "Late show",
                "created then updated: one create with the last values")
            #expect(sets[0]["shows"]?.attributes["2"]?["starts_at"] == "2026-01-02T23:30:00.123456Z")
            #expect(sets[0]["shows"]?.attributes["1"]?["seats"] == 250)
            #expect(
                sets[1].changes.isEmpty,
                "a row created and deleted in one transaction leaves an empty revision, not a gap")
            #expect(sets[2]["shows"]?.delete == [2])
            // The change log and the snapshot share one mapping: replaying gives the tables.
            let replayed = replay(
                sets,
                onto: [
                    "venues": [["hall", "Main Hall", "2001-02-03T04:05:06.5Z", "AQL/", 1]],
                    "shows": [[1, "Opening", "hall", 12.5, 0.1, false, "2026-01-01T19:00:00Z", 300, 1]],
                ], schema: teamSchema)
            #expect(try await Fixtures.contents(of: store) == replayed)
        }
    }

    @Test func rolledBackAndKilledTransactionsLeaveNoGapAndNoTrace() async throws {
        try await withAttachedTeamTables { location, store in
            try await psql("BEGIN; INSERT INTO venues VALUES ('gone', 'Gone'); ROLLBACK", on: location)
            #expect(try await store.schemaInfo().revision == 1)
            // A writer killed mid-transaction, after its write took the revision.
            try await TestPostgres.withConnection(to: location) { writer, logger in
                try await writer.execute("BEGIN; INSERT INTO venues VALUES ('killed', 'Killed')", logger: logger)
                var pid: Int32 = 0
                for try await value in try await writer.query("SELECT pg_backend_pid()", logger: logger).decode(
                    Int32.self)
                { pid = value }
                try await psql("SELECT pg_terminate_backend(\(pid), 10000)", on: location)
            }
            try await psql("INSERT INTO venues VALUES ('kept', 'Kept')", on: location)
            let sets = try await changeSets(of: store, after: 1)
            #expect(sets.map(\.revision) == [2])
            #expect(sets[0]["venues"]?.create == ["kept"])
            #expect(try await store.keys(of: "venues") == ["hall", "kept"])
        }
    }

    @Test func truncateIsABulkRevisionThatClientsReseedFrom() async throws {
        try await withAttachedTeamTables { location, store in
            try await psql("UPDATE venues SET name = 'Hall'", on: location)
            try await psql(
                "BEGIN; DELETE FROM shows; TRUNCATE venues CASCADE; INSERT INTO venues VALUES ('new', 'New'); COMMIT",
                on: location)
            let info = try await store.schemaInfo()
            #expect(info.revision == 3 && info.minRevision == 3)
            await #expect { try await store.changeFeed(after: 2, limit: 10, byteBudget: 1 << 20) } throws: {
                ($0 as? SyncStoreError)?.code == .historyExpired
            }
            #expect(
                try await Fixtures.contents(of: store) == ["venues": [["new", "New", .null, .null, 3]], "shows": []])
            try await psql("INSERT INTO venues VALUES ('next', 'Next')", on: location)
            #expect(try await changeSets(of: store, after: 3).map(\.revision) == [4])
        }
    }

    @Test func keyChangesAreADeleteAndACreate() async throws {
        try await withAttachedTeamTables { location, store in
            try await psql("UPDATE shows SET id = 7 WHERE id = 1", on: location)
            let sets = try await changeSets(of: store, after: 1)
            #expect(sets.count == 1)
            #expect(
                sets[0]["shows"]?.create == [7] && sets[0]["shows"]?.delete == [1] && sets[0]["shows"]?.update == [])
            #expect(try await store.keys(of: "shows") == [7])
            // Deleted and created again in one transaction: an update.
            try await psql(
                """
                BEGIN; DELETE FROM shows WHERE id = 7;
                INSERT INTO shows (id, title, price, starts_at) VALUES (7, 'Again', 1, '2026-05-05T05:05:05Z'); COMMIT
                """, on: location)
            let again = try await changeSets(of: store, after: 2)
            #expect(again.count == 1 && again[0]["shows"]?.update == [7] && again[0]["shows"]?.create == [])
            #expect(again[0]["shows"]?.attributes["7"]?["title"] == "Again")
        }
    }

    @Test func commitsThroughTheStoreAreCapturedLikeAnyWrite() async throws {
        try await withAttachedTeamTables { location, store in
            let revision = try await store.commit(
                ChangeSet(changes: [
                    TypeChanges(
                        type: "venues", create: ["park"], attributes: ["park": ["name": "Park", "photo": "AAEC"]]),
                    TypeChanges(
                        type: "shows", update: [1],
                        attributes: [
                            "1": [
                                "title": "Opening", "venue": "park", "price": 12.5, "sold_out": true,
                                "starts_at": "2026-01-01T19:00:00Z",
                            ]
                        ]),
                ]))
            #expect(revision == 2)
            try await psql("UPDATE shows SET seats = 10", on: location)
            let sets = try await changeSets(of: store, after: 1)
            #expect(sets.map(\.revision) == [2, 3])
            #expect(sets[0]["venues"]?.attributes["park"]?["photo"] == "AAEC")
            #expect(sets[1]["shows"]?.attributes["1"]?["venue"] == "park")
            // A table's own constraint refuses a value: an invalid change set, nothing written.
            await #expect {
                try await store.commit(
                    ChangeSet(changes: [
                        TypeChanges(
                            type: "venues", create: ["long"],
                            attributes: ["long": ["name": .string(String(repeating: "x", count: 10))]]),
                        TypeChanges(
                            type: "shows", create: [5],
                            attributes: [
                                "5": [
                                    "title": .string(String(repeating: "t", count: 300)), "price": 1, "sold_out": false,
                                    "starts_at": "2026-01-01T19:00:00Z",
                                ]
                            ]),
                    ]))
            } throws: { error in
                let error = error as? SyncStoreError
                return error?.code == .invalidChangeSet && error!.description.contains("shows[5]")
                    && error!.description.contains("22001")
            }
            #expect(try await store.schemaInfo().revision == 3)
        }
    }
}

/// Pushed change sets on attached tables: ordinary writes the capture sees, keys from the team's
/// own sequence.
@Suite(.needsPostgres, .tags(.postgres)) struct PushCaptureTests {
    @Test func pushedRowsTakeKeysFromTheTablesSequenceSoTheTeamsInsertsDoNotCollide() async throws {
        let tables = """
            CREATE TABLE notes (id serial PRIMARY KEY, body text NOT NULL);
            INSERT INTO notes (body) VALUES ('first'), ('second')
            """
        let schema = DatasetSchema(
            dataset: "notes", schemaVersion: 1,
            types: [
                EntityType(
                    name: "notes", primaryKey: PrimaryKey(name: "id", type: .integer),
                    fields: [Field(name: "body", type: .text)])
            ])
        try await withTeamDatabase(tables) { location in
            try await PostgresSyncStore.attach(at: location, schema: schema)
            try await TestPostgres.withStore(at: location) { store in
                let pushed = try PushedChangeSet(
                    json: JSONParser.parse(
                        Array(
                            #"{"id": "n1", "types": ["notes"], "notes": {"create": [-1, -2], "attributes": {"-1": {"body": "a"}, "-2": {"body": "b"}}}}"#
                                .utf8)))
                let result = try await store.push(pushed, retention: .seconds(60))
                #expect(result.status == .applied(revision: 2, keys: ["notes": ["-1": 3, "-2": 4]]))
                // The team's application draws the next key from the same sequence: no collision.
                try await psql("INSERT INTO notes (body) VALUES ('from the app')", on: location)
                #expect(try await store.keys(of: "notes") == [1, 2, 3, 4, 5])
                let sets = try await changeSets(of: store, after: 1)
                #expect(
                    sets.map(\.revision) == [2, 3] && sets[0]["notes"]?.create == [3, 4]
                        && sets[1]["notes"]?.create == [5])
                // Rows written with explicit keys leave the sequence behind: it is moved past them.
                try await psql("INSERT INTO notes (id, body) VALUES (20, 'imported')", on: location)
                let later = try PushedChangeSet(
                    json: JSONParser.parse(
                        Array(
                            #"{"id": "n2", "types": ["notes"], "notes": {"create": [-1], "attributes": {"-1": {"body": "c"}}}}"#
                                .utf8)))
                #expect(
                    try await store.push(later, retention: .seconds(60)).status
                        == .applied(revision: 5, keys: ["notes": ["-1": 21]]))
                try await psql("INSERT INTO notes (body) VALUES ('from the app again')", on: location)
                #expect(try await store.keys(of: "notes").suffix(3) == [20, 21, 22])
                // A sequence at its end: the create is rejected, nothing is written, the store goes on.
                try await psql("SELECT setval('notes_id_seq', 2147483647)", on: location)
                let last = try PushedChangeSet(
                    json: JSONParser.parse(
                        Array(
                            #"{"id": "n3", "types": ["notes"], "notes": {"create": [-1], "attributes": {"-1": {"body": "d"}}}}"#
                                .utf8)))
                let refused = try await store.push(last, retention: .seconds(60))
                guard case .rejected(let code, let message) = refused.status else {
                    Issue.record("not rejected: \(refused)")
                    return
                }
                #expect(
                    code == "invalid_change_set" && message.contains("notes has no integer keys left"), "\(message)")
                #expect(try await store.revisions().revision == 6)
                #expect(try await store.keys(of: "notes").count == 8, "rows 1-5 and 20-22, no new one")
            }
        }
    }
}

extension PushCaptureTests {
    /// The store's lock is taken before the revisions are checked: a psql writer that commits a
    /// change to the row while the push waits makes the push a conflict, never a lost update.
    @Test func aWriterCommittingDuringThePushMakesItAConflict() async throws {
        try await withAttachedTeamTables { location, store in
            try await TestPostgres.withConnection(to: location) { connection, logger in
                try await connection.query("BEGIN", logger: logger)
                try await connection.query("UPDATE shows SET seats = 1 WHERE id = 1", logger: logger)
                let push = Task {
                    try await store.push(
                        PushedChangeSet(
                            json: JSONParser.parse(
                                Array(
                                    #"{"id": "p", "types": ["shows"], "shows": {"update": [1], "attributes": {"1": {"title": "Mine", "price": 1, "sold_out": false, "starts_at": "2026-01-01T19:00:00Z", "revision": 1}}}}"#
                                        .utf8))), retention: .seconds(60))
                }
                try await Task.sleep(for: .milliseconds(500))
                try await connection.query("COMMIT", logger: logger)
                guard case .conflict(let truth) = try await push.value.status else {
                    Issue.record("the push overwrote a row changed under it")
                    return
                }
                #expect(
                    truth["shows"]?.attributes["1"]?["seats"] == 1 && truth["shows"]?.attributes["1"]?["revision"] == 2)
            }
            #expect(try await Fixtures.contents(of: store)["shows"]?.first?[1] == "Opening")
        }
    }
}

extension PushCaptureTests {
    /// A store whose `seedsync._revision()` predates live sync (no `NOTIFY`) gets the notifying
    /// one when a server opens it, so its commits wake held requests at once.
    @Test func openingAStoreMadeBeforeLiveSyncAddsTheNotification() async throws {
        try await withTeamDatabase { location in
            try await PostgresSyncStore.attach(at: location, schema: teamSchema)
            // The function as servers before live sync made it: today's without its notification.
            let withoutNotify = CaptureSQL.revisionFunction.split(separator: "\n")
                .filter { !$0.contains("pg_notify") }.joined(separator: "\n")
            #expect(withoutNotify != CaptureSQL.revisionFunction)
            _ = try await TestPostgres.withConnection(to: location) { connection, logger in
                try await connection.query(PostgresQuery(unsafeSQL: withoutNotify), logger: logger)
            }
            try await TestPostgres.withStore(at: location) { store in
                let revisions = NIOLockedValueBox<[Int64]>([])
                let watch = Task {
                    await store.watchRevisions { revision in revisions.withLockedValue { $0.append(revision) } }
                }
                defer { watch.cancel() }
                // Two reports: the fallback read's and the listener's, made once it listens.
                while revisions.withLockedValue({ $0.count < 2 }) { try await Task.sleep(for: .milliseconds(10)) }
                let committed = ContinuousClock.now
                try await psql("INSERT INTO venues VALUES ('late', 'Late')", on: location)
                while !revisions.withLockedValue({ $0.contains(2) }), ContinuousClock.now - committed < .seconds(10) {
                    try await Task.sleep(for: .milliseconds(10))
                }
                let elapsed = ContinuousClock.now - committed
                let reported = revisions.withLockedValue { $0 }
                #expect(reported.contains(2), "\(reported)")
                #expect(elapsed < .milliseconds(4_000), "notified, not found by the 5 s read")
                #expect(reported.first == 1)
            }
        }
    }
}
