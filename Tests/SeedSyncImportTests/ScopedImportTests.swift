import Foundation
import SeedSyncBuild
import SeedSyncClient
import SeedSyncImport
import SeedSyncModel
import SeedSyncSeed
import SeedSyncServer
import SeedSyncStore
import SeedSyncTesting
import Testing

/// An app of one team on a dataset split by team (`Fixtures.clubsSchema`): its seed, built with
/// its token, and its catch-up hold that team's rows and the shared ones, nothing else, as rows
/// move between teams.
@Suite struct ScopedImportTests {
    @Test func anAppOfOneTeamBuildsItsSeedAndCatchesUpItsTeamAlone() async throws {
        try await withTemporaryDirectory { directory in
            let store = try await Fixtures.clubsStore(in: directory)
            try await withLiveServer(store, configure: { $0.jwt = TestIdentityProvider.teamJWT }) { url in
                let served = ServedStore(url: url, store: store, directory: directory)
                let one = try await TestIdentityProvider.teamToken([1])
                let grant = ScopeGrant.only([.int(1)])
                let report = try await served.builder("team-1.sqlite", pageSize: 2, token: one).build()
                #expect(try contents(ofSeed: report.output) == (try await Fixtures.contents(of: store, grant: grant)))
                #expect(try contents(ofSeed: report.output)["events"]?.count == 3)
                #expect(report.manifest.scopes == [1], "the seed says whose rows it holds")
                #expect(try SeedFile.read(report.output) { try $0.metadata().scopes } == [1])
                // Other teams change, an event (with its ticket) moves in, another moves out.
                for title in ["a", "b", "c"] {
                    try await store.commit(Self.retitle(301, team: 3, title))
                }
                try await store.commit(Self.move(201, to: 1))
                try await store.commit(Self.move(102, to: 3))
                try await store.commit(Self.retitle(301, team: 3, "last, not team 1's"))
                let importer = SeedImporter(
                    configuration: .init(
                        seed: report.output, database: served.path("app.sqlite"),
                        server: .init(serverURL: url, token: one, requestTimeout: 10, retry: .none), syncLimit: 2))
                let imported = try await importer.run()
                #expect(imported.changeSets >= 2)
                let rows = try contents(ofSeed: served.path("app.sqlite"))
                #expect(rows == (try await Fixtures.contents(of: store, grant: grant)))
                #expect(rows["events"]?.map { $0[0] } == [101, 103, 201])
                #expect(try revision(of: served.path("app.sqlite")) == (try await store.revisions().revision))
            }
        }
    }

    /// Moves `event` and its ticket to `team`.
    static func move(_ event: Int64, to team: Int64) -> ChangeSet {
        ChangeSet(changes: [
            TypeChanges(
                type: "events", update: [.int(event)],
                attributes: [String(event): ["team_id": .int(team), "title": "moved", "venue_id": 1]]),
            TypeChanges(
                type: "tickets", update: [.int(event)],
                attributes: [String(event): ["team_id": .int(team), "event_id": .int(event)]]),
        ])
    }

    static func retitle(_ event: Int64, team: Int64, _ title: String) -> ChangeSet {
        ChangeSet(changes: [
            TypeChanges(
                type: "events", update: [.int(event)],
                attributes: [String(event): ["team_id": .int(team), "title": .string(title), "venue_id": 1]])
        ])
    }
}
