import Foundation
import GRDB
import SeedSyncBuild
import SeedSyncClient
import SeedSyncImport
import SeedSyncModel
import SeedSyncPostgres
import SeedSyncTesting
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The app writes through SeedSync: local edits, the outbox, pushes, key maps, conflicts. On
/// every store the server may run on.
@Suite struct WriteBackTests {
    /// A local edit is in the tables when `write` returns, with temporary keys, queued once; a
    /// bad edit writes nothing.
    @Test func localEditsAreVisibleAtOnceAndQueued() async throws {
        try await withWriteBack(.sqlite) { fixture in
            try await fixture.sync("app")
            let importer = fixture.importer("app")
            let (hall, gig) = try await importer.write { changes in
                let hall = try changes.create("locations", location("Hall"))
                let gig = try changes.create("events", event("Gig", at: hall))
                try changes.update("events", key: 5, ["title": "Renamed"])
                try changes.delete("events", key: 6)
                return (hall, gig)
            }
            #expect(hall == -1 && gig == -1, "temporary keys start below the smallest key, per type")
            let rows = try fixture.query("app") { db in
                (
                    try String.fetchOne(db, sql: "SELECT title FROM events WHERE id = -1"),
                    try Int64.fetchOne(db, sql: "SELECT location_id FROM events WHERE id = -1"),
                    try String.fetchOne(db, sql: "SELECT title FROM events WHERE id = 5"),
                    try Int.fetchOne(db, sql: "SELECT count(*) FROM events WHERE id = 6"),
                    try String.fetchAll(db, sql: "SELECT change_set FROM _seedsync_outbox")
                )
            }
            #expect(rows.0 == "Gig" && rows.1 == -1 && rows.2 == "Renamed" && rows.3 == 0)
            let queued = try ChangeSet(json: JSONParser.parse(Array(try #require(rows.4.first).utf8)))
            #expect(rows.4.count == 1 && queued.types == ["locations", "events"])
            #expect(
                queued["events"]?.create == [-1] && queued["events"]?.update == [5] && queued["events"]?.delete == [6])
            let base = try #require(try await fixture.serverRow("events", 5)).last
            #expect(
                queued["events"]?.attributes["5"]?["revision"] == base
                    && queued["events"]?.attributes["6"]?.keys.sorted() == ["revision"])
            #expect(try await importer.pendingChangeSets() == 1)

            // A second write takes the next temporary key; a bad one writes nothing.
            #expect(try await importer.write { try $0.create("locations", location("Annex")) } == -2)
            await #expect {
                try await importer.write { changes in
                    try changes.update("events", key: 7, ["title": "Lost"])
                    try changes.create("events", event("Nowhere", at: 999))
                }
            } throws: { ($0 as? ImportError)?.code == .invalidChangeSet }
            await #expect { try await importer.write { try $0.update("events", key: 9999, ["title": "x"]) } } throws: {
                ($0 as? ImportError)?.code == .rowNotFound
            }
            await #expect {
                try await importer.write { try $0.update("events", key: 7, ["capacity": "many"]) }
            } throws: { ($0 as? ImportError)?.code == .invalidChangeSet }
            let after = try fixture.query("app") { db in
                (
                    try String.fetchOne(db, sql: "SELECT title FROM events WHERE id = 7"),
                    try Int.fetchOne(db, sql: "SELECT count(*) FROM _seedsync_outbox")
                )
            }
            #expect(after.0 != "Lost" && after.1 == 2)
        }
    }

    /// A server row with the smallest key there is (`Int64.min`), and others with negative keys,
    /// written by a program of the team's own (the store's commits refuse them): a new local row
    /// still gets a free negative key (it was an arithmetic overflow, a crash of the app), the next
    /// one another free one, and both are pushed.
    /// Change sets in the server's shape are written with no server configured: the list's
    /// temporary keys become the database's, across change sets; a bad one stops the list, the
    /// ones before it staying queued; the next sync pushes them.
    @Test func aListOfChangeSetsIsWrittenWithoutAServer() async throws {
        try await withWriteBack(.sqlite) { fixture in
            try await fixture.sync("app")
            let writer = LocalWriter(database: fixture.importer("app").configuration.database)
            // The database's -1 is taken: the list's -1 becomes -2.
            try await writer.write { changes in
                try changes.create("events", event("Earlier", at: try changes.create("locations", location("Annex"))))
            }
            let hall = ChangeSet(changes: [
                TypeChanges(type: "locations", create: [-1], attributes: ["-1": location("Hall")]),
                TypeChanges(type: "events", create: [-1], attributes: ["-1": event("Gig", at: -1)]),
            ])
            let rename = ChangeSet(changes: [
                TypeChanges(type: "events", update: [-1], attributes: ["-1": ["title": "Renamed gig"]])
            ])
            let queued = try await writer.write(changeSets: [hall, rename], from: "the test")
            #expect(queued.count == 2 && queued[0].keys == ["locations": [-1: -2], "events": [-1: -2]])
            let title = try fixture.query("app") { db in
                try String.fetchOne(db, sql: "SELECT title FROM events WHERE id = -2 AND location_id = -2")
            }
            #expect(title == "Renamed gig", "the second change set named the first's new row by the list's key")

            let broken = ChangeSet(changes: [
                TypeChanges(type: "events", update: [-77], attributes: ["-77": ["title": "x"]])
            ])
            await #expect {
                try await writer.write(changeSets: [rename, broken], from: "edits.json")
            } throws: { error in
                let error = try #require(error as? ImportError)
                return error.code == .rowNotFound
                    && error.description.hasPrefix("change set 2 of edits.json: ")
                    && error.description.hasSuffix("the first 1 were queued")
            }
            #expect(try await writer.pendingChangeSets() == 4)
            try await fixture.sync("app")
            #expect(try await writer.pendingChangeSets() == 0)
        }
    }

    @Test(.needsPostgres, .tags(.postgres)) func aRowWithTheSmallestKeyLeavesTemporaryKeysFree() async throws {
        try await withWriteBack(.postgres) { fixture in
            let postgres = try #require(fixture.store as? PostgresSyncStore)
            try await TestPostgres.runScript(
                """
                INSERT INTO public.locations (id, name, city, latitude, longitude) VALUES
                  (-9223372036854775808, 'Lowest', 'Nice', 0, 0), (-1, 'Minus one', 'Nice', 0, 0),
                  (-3, 'Minus three', 'Nice', 0, 0)
                """, on: postgres.location)
            try await fixture.sync("app")
            let importer = fixture.importer("app")
            // In one write: -2, then not -3 (a server row), but the next free key below.
            let keys = try await importer.write { changes in
                [try changes.create("locations", location("Hall")), try changes.create("locations", location("Annex"))]
            }
            #expect(keys == [-2, -4])
            try await fixture.sync("app")
            let names = try await fixture.serverContents()["locations"]?.map(\.[1]) ?? []
            #expect(names.filter { $0 == "Hall" || $0 == "Annex" }.count == 2)
            #expect(try fixture.appContents("app") == (try await fixture.serverContents()))
        }
    }

    /// Temporary keys become the real ones in the rows, in references, and in a later change set
    /// that refers to them; the app ends equal to the server.
    @Test(arguments: StoreBackend.tested) func pushReplacesTemporaryKeysEverywhere(backend: StoreBackend) async throws {
        try await withWriteBack(backend) { fixture in
            try await fixture.sync("app")
            let importer = fixture.importer("app")
            let (hall, gig) = try await importer.write { changes in
                let hall = try changes.create("locations", location("Hall"))
                return (hall, try changes.create("events", event("Gig", at: hall)))
            }
            try await importer.write { changes in
                try changes.update("events", key: gig, ["title": "Gig, moved"])
                try changes.create("events", event("Encore", at: hall))
                try changes.update("events", key: 3, ["location_id": hall])
            }
            let (report, outcomes) = try await fixture.sync("app")
            #expect(
                report.pushed == 2 && report.conflicts == 0 && report.rejected == 0 && report.pending == 0,
                "\(outcomes)")
            guard case .pushed(_, let first, let keys)? = outcomes.first else {
                Issue.record("\(outcomes)")
                return
            }
            let realHall = try #require(keys["locations"]?["-1"])
            let realGig = try #require(keys["events"]?["-1"])
            #expect(realHall == 7 && realGig == 41)
            guard case .pushed(_, let second, let laterKeys)? = outcomes.last else {
                Issue.record("\(outcomes)")
                return
            }
            #expect(second == first + 1 && laterKeys["events"]?["-2"] == 42)
            let server = try await fixture.serverContents()
            #expect(try fixture.appContents("app") == server)
            let gigRow = try #require(server["events"]?.first { $0[0] == realGig })
            #expect(gigRow[1] == "Gig, moved" && gigRow[4] == realHall && gigRow.last == .int(second))
            #expect(server["events"]?.first { $0[0] == 3 }?[4] == realHall)
            let negative = try fixture.query("app") { db in
                try Int.fetchOne(
                    db,
                    sql:
                        "SELECT (SELECT count(*) FROM events WHERE id < 0 OR location_id < 0) + (SELECT count(*) FROM locations WHERE id < 0) + (SELECT count(*) FROM _seedsync_shadow) + (SELECT count(*) FROM _seedsync_outbox)"
                )
            }
            #expect(negative == 0)
        }
    }

    /// Two apps edit the same event; the second push conflicts: its rows go back to the server's,
    /// the location it created goes away, and both apps end equal to the server row by row.
    @Test(arguments: StoreBackend.tested) func aConflictRestoresTheServersRowsAndAppsConverge(backend: StoreBackend)
        async throws
    {
        try await withWriteBack(backend) { fixture in
            try await fixture.sync("first")
            try await fixture.sync("second")
            // The server's answer to the second then names a location the second does not have yet.
            try await fixture.importer("first").write { changes in
                let tent = try changes.create("locations", location("Tent"))
                try changes.update("events", key: 5, ["title": "First's title", "location_id": tent])
            }
            try await fixture.importer("second").write { changes in
                try changes.update("events", key: 5, ["title": "Second's title", "capacity": 3])
                let annex = try changes.create("locations", location("Annex"))
                try changes.update("events", key: 8, ["location_id": annex])
            }
            try await fixture.importer("second").write {
                try $0.update("events", key: 9, ["title": "Untouched by anyone else"])
            }
            let first = try await fixture.sync("first")
            #expect(first.report.pushed == 1)
            let second = try await fixture.sync("second")
            #expect(
                second.report.pushed == 1 && second.report.conflicts == 1 && second.report.pending == 0,
                "\(second.outcomes)")
            guard case .conflict(_, let truth)? = second.outcomes.first else {
                Issue.record("\(second.outcomes)")
                return
            }
            #expect(truth.conflict && truth["events"]?.update.contains(5) == true)
            #expect(truth["events"]?.attributes["5"]?["title"] == "First's title")
            try await fixture.sync("first")
            let server = try await fixture.serverContents()
            #expect(server["events"]?.first { $0[0] == 5 }?[1] == "First's title")
            #expect(server["events"]?.first { $0[0] == 9 }?[1] == "Untouched by anyone else")
            #expect(server["locations"]?.count == 7, "the first's tent, and not the second's annex")
            #expect(try fixture.appContents("first") == server)
            #expect(try fixture.appContents("second") == server)
        }
    }

    /// A server change set that deletes a row a pending local change set references drops that
    /// change set before it is pushed (it could never apply), instead of stopping the sync.
    @Test func aChangeSetTheServerBrokeIsDroppedAndTheSyncGoesOn() async throws {
        try await withWriteBack(.sqlite) { fixture in
            try await fixture.commit(
                #"{"types": ["locations"], "locations": {"create": [50], "attributes": {"50": {"name": "Tent", "city": "Lyon", "latitude": 1.0, "longitude": 2.0}}}}"#
            )
            try await fixture.sync("app")
            let importer = fixture.importer("app")
            try await importer.write { try $0.update("events", key: 4, ["capacity": 10]) }
            // Waits for the first: it edits the same event again.
            try await importer.write { changes in
                try changes.update("events", key: 4, ["capacity": 20])
                try changes.create("events", event("In the tent", at: 50))
            }
            try await fixture.commit(#"{"types": ["locations"], "locations": {"delete": [50]}}"#)
            let (report, outcomes) = try await fixture.sync("app")
            #expect(report.pushed == 1 && report.rejected == 1 && report.pending == 0, "\(outcomes)")
            guard case .rejected(_, let code, let message)? = outcomes.last else {
                Issue.record("\(outcomes)")
                return
            }
            #expect(code == "broken_reference" && message.contains("locations[50]"), "\(message)")
            let server = try await fixture.serverContents()
            #expect(server["events"]?.first { $0[0] == 4 }?[5] == 10)
            #expect(try fixture.appContents("app") == server)
        }
    }

    /// A read token catches up, keeps the change sets and says how many wait. A server change to
    /// the row a pending edit changes is applied all the same (the server wins); a write token
    /// then pushes, and the edit conflicts by its base revision.
    @Test func aReadTokenCatchesUpAndThePendingEditConflictsLater() async throws {
        try await withWriteBack(.sqlite) { fixture in
            try await fixture.sync("app", token: liveServerToken)
            try await fixture.importer("app").write { try $0.update("events", key: 5, ["title": "Waiting"]) }
            try await fixture.importer("app").write { try $0.update("events", key: 6, ["title": "Waiting too"]) }
            try await fixture.commit(
                #"{"types": ["events"], "events": {"update": [5], "attributes": {"5": {"title": "Server side", "starts_at": "2026-01-01T00:00:00Z", "capacity": 1, "cancelled": false}}}}"#
            )
            await #expect { try await fixture.sync("app", token: liveServerToken) } throws: { error in
                guard let error = error as? ImportError, error.code == .pushForbidden else { return false }
                return error.description.contains("2 local change sets are waiting")
            }
            let (revision, title) = try fixture.query("app") { db in
                (
                    try String.fetchOne(db, sql: "SELECT value FROM _seedsync_seed WHERE key = 'revision'"),
                    try String.fetchOne(db, sql: "SELECT title FROM events WHERE id = 5")
                )
            }
            #expect(revision == String(try await fixture.store.schemaInfo().revision), "caught up all the same")
            #expect(title == "Server side", "the server wins over the pending edit")
            #expect(try await fixture.importer("app").pendingChangeSets() == 2)
            let (report, outcomes) = try await fixture.sync("app")
            #expect(report.conflicts == 1 && report.pushed == 1 && report.pending == 0, "\(outcomes)")
            let server = try await fixture.serverContents()
            #expect(
                server["events"]?.first { $0[0] == 5 }?[1] == "Server side"
                    && server["events"]?.first { $0[0] == 6 }?[1] == "Waiting too")
            #expect(try fixture.appContents("app") == server)
        }
    }

    /// The answer to a push is lost after the server applied it, and a newer seed (holding the
    /// new row) replaces the database: the replayed answer finds the real key there already,
    /// and the temporary row gives way to it.
    @Test func aLostAnswerReplayedAfterAReplacementKeepsOneRow() async throws {
        try await withWriteBack(.sqlite) { fixture in
            try await fixture.sync("app")
            try await fixture.importer("app").write { changes in
                let hall = try changes.create("locations", location("Hall"))
                try changes.update("events", key: 5, ["location_id": hall])
            }
            // The push the app made before it lost the answer.
            let real = try #require(try await fixture.pushLosingTheAnswer("app")["locations"]?["-1"]?.keyString)
            // Someone renames the hall before the newer seed is built: the app must keep that.
            try await fixture.commit(
                #"{"types": ["locations"], "locations": {"update": [\#(real)], "attributes": {"\#(real)": {"name": "Great hall", "city": "Lyon", "latitude": 45.76, "longitude": 4.84}}}}"#
            )
            let newer = try await fixture.buildSeed("newer.sqlite")
            let (report, outcomes) = try await fixture.sync("app", seed: newer)
            #expect(report.replacements.count == 1 && report.pushed == 1 && report.pending == 0, "\(outcomes)")
            let server = try await fixture.serverContents()
            #expect(server["locations"]?.filter { $0[1] == "Great hall" }.count == 1)
            #expect(try fixture.appContents("app") == server)
        }
    }

    /// A lost answer whose real key the app has deleted since (it came back through a read-only
    /// catch-up): the replayed answer points a waiting change set's reference at a missing row,
    /// and the repair drops that change set instead of failing the commit on every run.
    @Test func aReplayedAnswerOntoADeletedRowDropsTheChangeSetItBreaks() async throws {
        try await withWriteBack(.sqlite) { fixture in
            try await fixture.sync("app")
            let importer = fixture.importer("app")
            let hall = try await importer.write { try $0.create("locations", location("Hall")) }
            try await importer.write { try $0.create("events", event("In the hall", at: hall)) }
            let real = try #require(try await fixture.pushLosingTheAnswer("app")["locations"]?["-1"])
            // A read token catches up (the server's row arrives), and the app deletes it.
            await #expect(throws: ImportError.self) { try await fixture.sync("app", token: liveServerToken) }
            try await importer.write { try $0.delete("locations", key: real) }
            let (report, outcomes) = try await fixture.sync("app")
            #expect(report.pushed == 2 && report.rejected == 1 && report.pending == 0, "\(outcomes)")
            #expect(
                outcomes.contains { if case .rejected(_, "broken_reference", _) = $0 { true } else { false } },
                "\(outcomes)")
            let server = try await fixture.serverContents()
            #expect(!(server["locations"] ?? []).contains { $0[0] == real })
            #expect(try fixture.appContents("app") == server)
        }
    }

    /// A lost answer replayed after the app caught up past it (with a read token): the server
    /// renamed the event since and deleted the location the change set created; the replay
    /// keeps the rename and does not bring the location back.
    @Test func aReplayedAnswerAfterCatchingUpKeepsTheServersNewerState() async throws {
        try await withWriteBack(.sqlite) { fixture in
            try await fixture.sync("app")
            let importer = fixture.importer("app")
            try await importer.write { changes in
                try changes.update("events", key: 5, ["title": "Mine"])
                try changes.create("locations", location("Shed"))
            }
            let shed = try #require(try await fixture.pushLosingTheAnswer("app")["locations"]?["-1"]?.keyString)
            try await fixture.commit(
                #"{"types": ["events"], "events": {"update": [5], "attributes": {"5": {"title": "Theirs", "starts_at": "2026-01-01T00:00:00Z", "capacity": 2, "cancelled": false}}}}"#
            )
            try await fixture.commit(#"{"types": ["locations"], "locations": {"delete": [\#(shed)]}}"#)
            await #expect(throws: ImportError.self) { try await fixture.sync("app", token: liveServerToken) }
            let (report, outcomes) = try await fixture.sync("app")
            #expect(report.pushed == 1 && report.pending == 0, "\(outcomes)")
            let server = try await fixture.serverContents()
            #expect(server["events"]?.first { $0[0] == 5 }?[1] == "Theirs")
            #expect(try fixture.appContents("app") == server)
        }
    }

    /// While the database is marked as being replaced by a running importer, a local write waits;
    /// a mark left by a killed importer (its lock free) is removed and the write goes through.
    @Test func aLocalWriteWaitsWhileTheDatabaseIsReplaced() async throws {
        try await withWriteBack(.sqlite) { fixture in
            try await fixture.sync("app")
            let queue = try DatabaseQueue(path: fixture.database("app"))
            try await queue.write { db in
                try db.execute(sql: "CREATE TABLE _seedsync_replacing (started TEXT NOT NULL)")
            }
            try queue.close()
            let lock = open(fixture.database("app") + ".lock", O_RDWR | O_CREAT, 0o644)
            #expect(flock(lock, LOCK_EX) == 0)
            let waiting = fixture.importer("app", lockTimeout: 0.3)
            await #expect {
                try await waiting.write { try $0.update("events", key: 5, ["title": "Blocked"]) }
            } throws: { ($0 as? ImportError)?.code == .locked }
            flock(lock, LOCK_UN)
            close(lock)
            try await waiting.write { try $0.update("events", key: 5, ["title": "Through"]) }
            let state = try fixture.query("app") { db in
                (
                    try db.tableExists("_seedsync_replacing"),
                    try String.fetchOne(db, sql: "SELECT title FROM events WHERE id = 5")
                )
            }
            #expect(!state.0 && state.1 == "Through")
        }
    }

    /// A server that takes fewer change sets per push answers 413: the importer halves its pushes
    /// until they fit, and pushes everything. A write too large for any push is refused whole.
    @Test func pushesShrinkToWhatTheServerTakesAndHugeWritesAreRefused() async throws {
        try await withWriteBack(.sqlite, configure: { $0.maxPushedChangeSets = 3 }) { fixture in
            try await fixture.sync("app")
            let importer = fixture.importer("app")
            for index in 0..<7 {
                try await importer.write {
                    try $0.update("events", key: .int(Int64(10 + index)), ["capacity": .int(Int64(index))])
                }
            }
            let (report, _) = try await fixture.sync("app")
            #expect(report.pushed == 7 && report.pending == 0)
            #expect(try fixture.appContents("app") == (try await fixture.serverContents()))

            let huge = String(repeating: "x", count: 5 << 20)
            await #expect {
                try await importer.write { try $0.update("events", key: 5, ["description": .string(huge)]) }
            } throws: { error in
                (error as? ImportError)?.code == .invalidChangeSet && "\(error)".contains("split the edits")
            }
            #expect(try await importer.pendingChangeSets() == 0)
        }
    }

    /// A change set larger than the server's body limit, pushed alone, can never go: it is
    /// dropped as `too_large`, its row goes back to the server's state, and the sync goes on.
    @Test func aChangeSetTheServerCannotTakeIsDroppedAsTooLarge() async throws {
        try await withWriteBack(.sqlite, configure: { $0.maxRequestBodySize = 4 << 10 }) { fixture in
            try await fixture.sync("app")
            let importer = fixture.importer("app")
            try await importer.write {
                try $0.update("events", key: 5, ["description": .string(String(repeating: "x", count: 6 << 10))])
            }
            try await importer.write { try $0.update("events", key: 6, ["title": "Small"]) }
            let (report, outcomes) = try await fixture.sync("app")
            #expect(report.rejected == 1 && report.pushed == 1 && report.pending == 0, "\(outcomes)")
            #expect(
                outcomes.contains { if case .rejected(_, "too_large", _) = $0 { true } else { false } }, "\(outcomes)")
            let server = try await fixture.serverContents()
            #expect(server["events"]?.first { $0[0] == 6 }?[1] == "Small")
            #expect(try fixture.appContents("app") == server)
        }
    }

    /// A newer seed replaces the database while change sets wait: they are carried into the new
    /// file, shown on its rows, and pushed by the same run.
    @Test func aReplacementKeepsTheOutbox() async throws {
        try await withWriteBack(.sqlite) { fixture in
            try await fixture.sync("app")
            let hall = try await fixture.importer("app").write { changes in
                let hall = try changes.create("locations", location("Hall"))
                try changes.update("events", key: 5, ["location_id": hall, "title": "In the hall"])
                return hall
            }
            try await fixture.commit(
                #"{"types": ["events"], "events": {"update": [7], "attributes": {"7": {"title": "Newer", "starts_at": "2026-01-01T00:00:00Z", "capacity": 1, "cancelled": false}}}}"#
            )
            let newer = try await fixture.buildSeed("newer.sqlite")
            let events = Locked<[ImportEvent]>([])
            let report = try await fixture.importer("app", seed: newer).run { event in
                events.update { $0.append(event) }
            }
            #expect(report.replacements.count == 1 && report.pushed == 1 && report.pending == 0, "\(events.value)")
            guard
                case .pushed(_, _, let keys)? = events.value.first(where: {
                    if case .pushed = $0 { true } else { false }
                })
            else { return }
            #expect(hall == -1 && keys["locations"]?["-1"] == 7)
            let server = try await fixture.serverContents()
            #expect(server["events"]?.first { $0[0] == 5 }?[4] == 7)
            #expect(try fixture.appContents("app") == server)
        }
    }
}
