import Foundation
import GRDB
import SeedSyncImport
import SeedSyncModel
import SeedSyncTesting
import Testing

/// ``SeedImporter/Configuration/beforeMerge``: told before a batch that writes rows with pending
/// local edits is committed, the batch waiting for it (bounded).
@Suite struct MergeNoticeTests {
    @Test func aBatchWritingARowWithAPendingEditWaitsForTheNotice() async throws {
        try await withWriteBack(.sqlite) { fixture in
            try await ConflictResolutionTests.pendingEdit(["capacity": 90], meetsServerChangeIn: fixture)
            try await fixture.commit(
                #"{"types": ["locations"], "locations": {"create": [70], "attributes": {"70": {"name": "Annex", "city": "Lyon", "latitude": 1.0, "longitude": 2.0}}}}"#
            )
            let before = try Self.appRevision(of: fixture, "app")
            let notices = Locked<[(MergeNotice, Int64)]>([])
            var configuration = fixture.importer("app", token: liveServerToken).configuration
            configuration.beforeMerge = { notice in
                // The batch waits: the database is still where it was.
                let revision = (try? Self.appRevision(of: fixture, "app")) ?? -1
                notices.update { $0.append((notice, revision)) }
                try? await Task.sleep(for: .milliseconds(300))
            }
            await #expect(throws: ImportError.self, "a read token: pushForbidden at the end") {
                try await SeedImporter(configuration: configuration).run()
            }
            let seen = notices.value
            #expect(seen.count == 1, "one batch writes the pending row")
            #expect(seen.first?.0.rows == ["events": [5]], "only the row with a pending edit")
            #expect(seen.first?.0.changeSets.contains { $0["events"]?.update.contains(5) == true } == true)
            #expect(seen.first?.1 == before, "nothing of the batch was committed while the app was told")
            #expect(try Self.appRevision(of: fixture, "app") == (try await fixture.store.schemaInfo().revision))
        }
    }

    @Test func aHandlerThatIgnoresCancellationHoldsTheBatchBackOnlyUntilTheTimeout() async throws {
        try await withWriteBack(.sqlite) { fixture in
            try await ConflictResolutionTests.pendingEdit(["capacity": 90], meetsServerChangeIn: fixture)
            var configuration = fixture.importer("app", token: liveServerToken).configuration
            configuration.mergeNoticeTimeout = 0.5
            // A handler that ignores cancellation, and returns only after 120 s: far beyond the run
            // itself (a few seconds, twenty on a loaded machine).
            configuration.beforeMerge = { _ in
                await withUnsafeContinuation { done in
                    DispatchQueue.global().asyncAfter(deadline: .now() + 120) { done.resume() }
                }
            }
            let started = ContinuousClock.now
            await #expect(throws: ImportError.self) { try await SeedImporter(configuration: configuration).run() }
            #expect(ContinuousClock.now - started < .seconds(90), "the batch went on after 0.5 s")
            #expect(try Self.appRevision(of: fixture, "app") == (try await fixture.store.schemaInfo().revision))
        }
    }

    /// A row an engine's observer marks as being edited gets the notice as a pending edit does;
    /// a row only observed does not.
    @Test func aRowAnObserverMarksAsBeingEditedGetsTheNotice() async throws {
        try await withImportFixture { fixture in
            let notices = Locked<[(MergeNotice, Int64)]>([])
            var configuration = fixture.importer().configuration
            configuration.beforeMerge = { notice in
                notices.update { $0.append((notice, (try? revision(of: fixture.database)) ?? -1)) }
            }
            let engine = try await SyncEngineTests.waitingEngine(configuration)
            let (edited, editedRow) = try await EngineObservationTests.firstEvent(of: fixture)
            let (shown, shownRow) = try await EngineObservationTests.firstEvent(of: fixture, skipping: 1)
            var form = await engine.observe(type: "events", key: edited, editing: true).makeAsyncIterator()
            var list = await engine.observe(type: "events", key: shown).makeAsyncIterator()
            #expect(await form.next()?.key == edited)
            #expect(await list.next()?.key == shown)

            _ = try await Self.rename(shown, shownRow, in: fixture)
            #expect(await list.next()?.fields?["title"] == "Renamed by the server")
            #expect(notices.value.isEmpty, "a row only observed: no notice")

            let before = try revision(of: fixture.database)
            _ = try await Self.rename(edited, editedRow, in: fixture)
            #expect(await form.next()?.fields?["title"] == "Renamed by the server")
            #expect(notices.value.map(\.0.rows) == [["events": [edited]]])
            #expect(notices.value.first?.1 == before, "told before the batch was committed")
            await engine.stop()
        }
    }

    /// Commits a server change set that renames the event `key`.
    static func rename(_ key: JSONValue, _ row: [String: JSONValue], in fixture: ImportFixture) async throws -> Int64 {
        var renamed = row
        renamed["title"] = "Renamed by the server"
        return try await fixture.served.store.commit(
            ChangeSet(changes: [TypeChanges(type: "events", update: [key], attributes: [key.keyString!: renamed])]))
    }

    static func appRevision(of fixture: WriteBackFixture, _ app: String) throws -> Int64 {
        try fixture.query(app) { db in
            try Int64(String.fetchOne(db, sql: "SELECT value FROM _seedsync_seed WHERE key = 'revision'") ?? "") ?? -1
        }
    }
}
