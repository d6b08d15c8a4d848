import Foundation
import GRDB
import SeedSyncImport
import SeedSyncModel
import SeedSyncTesting
import Testing

/// A pending local edit meeting a server change to the same row, under each
/// ``ConflictResolution``, against a real server: the edit rebased and pushed when the fields do
/// not overlap, lost (and reported with the losing version) when they do, or resolved by a closure.
@Suite struct ConflictResolutionTests {
    /// The server's change to event 5: a new title, the fields the app may edit (capacity,
    /// starts_at, cancelled) as the app has them now, the others null.
    static func serverTitle(_ fixture: WriteBackFixture, app: String = "app") throws -> String {
        let (startsAt, capacity, cancelled) = try fixture.query(app) { db in
            let row = try #require(
                try Row.fetchOne(db, sql: "SELECT starts_at, capacity, cancelled FROM events WHERE id = 5"))
            return (row["starts_at"] as String, row["capacity"] as Int, row["cancelled"] as Bool)
        }
        return
            #"{"types": ["events"], "events": {"update": [5], "attributes": {"5": {"title": "Server side", "starts_at": "\#(startsAt)", "capacity": \#(capacity), "cancelled": \#(cancelled)}}}}"#
    }

    /// `app` synced, a pending local edit of event 5 with `fields`, then the server's title change
    /// (``serverTitle(_:app:)``) committed.
    static func pendingEdit(_ fields: [String: JSONValue], meetsServerChangeIn fixture: WriteBackFixture)
        async throws
    {
        try await fixture.sync("app")
        let change = try serverTitle(fixture)
        try await fixture.importer("app").write { try $0.update("events", key: 5, fields) }
        try await fixture.commit(change)
    }

    @Test(arguments: StoreBackend.tested) func mergeFieldsRebasesAnEditOfOtherFieldsAndPushesIt(
        backend: StoreBackend
    ) async throws {
        try await withWriteBack(backend) { fixture in
            try await Self.pendingEdit(["capacity": 90], meetsServerChangeIn: fixture)
            let (report, outcomes) = try await fixture.sync("app", conflicts: .mergeFields)
            #expect(report.pushed == 1 && report.conflicts == 0 && report.pending == 0, "\(outcomes)")
            guard case .merged(let conflict, let pushing)? = outcomes.first else {
                Issue.record("\(outcomes)")
                return
            }
            #expect(conflict.local?["capacity"] == 90 && conflict.server?["title"] == "Server side")
            #expect(conflict.base?["title"] != "Server side")
            #expect(pushing["title"] == "Server side" && pushing["capacity"] == 90)
            let server = try await fixture.serverContents()
            let row = server["events"]?.first { $0[0] == 5 }
            #expect(row?[1] == "Server side" && row?[5] == 90, "\(String(describing: row))")
            #expect(try fixture.appContents("app") == server)
        }
    }

    @Test func mergeFieldsLetsTheServerWinARealOverlapAndReportsTheLosingVersion() async throws {
        try await withWriteBack(.sqlite) { fixture in
            try await Self.pendingEdit(["title": "Mine"], meetsServerChangeIn: fixture)
            let (report, outcomes) = try await fixture.sync("app", conflicts: .mergeFields)
            #expect(report.pushed == 0 && report.conflicts == 1 && report.pending == 0, "\(outcomes)")
            guard case .overwritten(let conflict)? = outcomes.first, case .conflict? = outcomes.last else {
                Issue.record("\(outcomes)")
                return
            }
            #expect(conflict.local?["title"] == "Mine" && conflict.server?["title"] == "Server side")
            #expect(conflict.mergedFields == nil)
            let server = try await fixture.serverContents()
            #expect(server["events"]?.first { $0[0] == 5 }?[1] == "Server side")
            #expect(try fixture.appContents("app") == server)
        }
    }

    @Test func aClosureResolvesAnOverlapWithTheRowToPush() async throws {
        try await withWriteBack(.sqlite) { fixture in
            try await Self.pendingEdit(["title": "Mine", "capacity": 7], meetsServerChangeIn: fixture)
            let keepMyTitle = ConflictResolution.custom { conflict in
                ["title": conflict.local?["title"] ?? .null]
            }
            let (report, outcomes) = try await fixture.sync("app", conflicts: keepMyTitle)
            #expect(report.pushed == 1 && report.conflicts == 0, "\(outcomes)")
            let server = try await fixture.serverContents()
            let row = server["events"]?.first { $0[0] == 5 }
            // The title the closure kept; the capacity the server's, since the closure left it out.
            #expect(row?[1] == "Mine" && row?[5] != 7, "\(String(describing: row))")
            #expect(try fixture.appContents("app") == server)
        }
    }

    /// A read token catches up over a pending edit: the catch-up rebases it at once (the app's row
    /// shows both changes), and the later push applies with no conflict.
    @Test func theCatchUpRebasesAPendingEditBeforeItIsPushed() async throws {
        try await withWriteBack(.sqlite) { fixture in
            try await Self.pendingEdit(["capacity": 90], meetsServerChangeIn: fixture)
            await #expect(throws: ImportError.self) {
                try await fixture.sync("app", token: liveServerToken, conflicts: .mergeFields)
            }
            let (title, capacity) = try fixture.query("app") { db in
                (
                    try String.fetchOne(db, sql: "SELECT title FROM events WHERE id = 5"),
                    try Int.fetchOne(db, sql: "SELECT capacity FROM events WHERE id = 5")
                )
            }
            #expect(title == "Server side" && capacity == 90, "the app shows both at once")
            let (report, outcomes) = try await fixture.sync("app", conflicts: .mergeFields)
            #expect(report.pushed == 1 && report.conflicts == 0, "\(outcomes)")
            let server = try await fixture.serverContents()
            #expect(try fixture.appContents("app") == server)
        }
    }

    @Test func mergedFieldsTakesDisjointChangesAndRefusesOverlapsAndDeletes() {
        let base: [String: JSONValue] = ["title": "Talk", "capacity": 80, "cancelled": false]
        var conflict = Conflict(
            type: "events", key: 5, local: ["title": "Talk", "capacity": 90, "cancelled": false], base: base,
            server: ["title": "Keynote", "capacity": 80, "cancelled": false])
        #expect(conflict.mergedFields == ["title": "Keynote", "capacity": 90, "cancelled": false])
        conflict.server?["capacity"] = 90
        #expect(conflict.mergedFields?["capacity"] == 90, "the same change on both sides is no conflict")
        conflict.server?["capacity"] = 100
        #expect(conflict.mergedFields == nil)
        conflict.server = nil
        #expect(conflict.mergedFields == nil, "deleted on the server")
    }
}
