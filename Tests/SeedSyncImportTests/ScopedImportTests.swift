import Crypto
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
    @Test(arguments: StoreBackend.tested) func anAppOfOneTeamBuildsItsSeedAndCatchesUpItsTeamAlone(
        backend: StoreBackend
    ) async throws {
        try await Self.withTeams(backend) { store, url, served in
            let one = try await TestIdentityProvider.teamToken([1])
            let grant = ScopeGrant.only([.int(1)])
            let report = try await served.builder("team-1.sqlite", pageSize: 2, token: one).build()
            #expect(try contents(ofSeed: report.output) == (try await Fixtures.contents(of: store, grant: grant)))
            #expect(try contents(ofSeed: report.output)["events"]?.count == 3)
            #expect(report.manifest.scopes == [1], "the seed says whose rows it holds")
            #expect(try SeedFile.read(report.output) { try $0.metadata().scopes } == [1])
            // Other teams change, an event (with its ticket) moves in, another moves out.
            for title in ["a", "b", "c"] {
                try await store.commit(Fixtures.clubsRetitle(301, team: 3, title))
            }
            try await store.commit(Self.move(201, to: 1))
            try await store.commit(Self.move(102, to: 3))
            try await store.commit(Fixtures.clubsRetitle(301, team: 3, "last, not team 1's"))
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

    /// A device whose grant shrinks then grows again, the engine running: team 2's rows leave in
    /// one transaction (observers told), its queued edit ends rejected `scope_revoked` while team
    /// 1's is pushed; then team 2 comes back, its rows alone downloaded, the database equal to the
    /// grant's rows.
    @Test(arguments: StoreBackend.tested) func aDeviceFollowsItsGrantAsItShrinksAndGrows(backend: StoreBackend)
        async throws
    {
        try await Self.withTeams(backend) { store, url, served in
            let both = try await TestIdentityProvider.teamToken([1, 2])
            let seed = try await served.builder("teams-1-2.sqlite", token: both).build().output
            let token = LockedValue(both)
            var configuration = SeedImporter.Configuration(
                seed: seed, database: served.path("app.sqlite"),
                server: .init(serverURL: url, token: both, requestTimeout: 10, retry: .none), syncLimit: 2)
            configuration.server.tokens = TokenProvider { _ in token.get() }
            let importer = SeedImporter(configuration: configuration)
            _ = try await importer.run()
            try await importer.write { changes in
                try changes.update("events", key: 201, ["title": "team 2's edit"])
            }
            try await importer.write { changes in
                try changes.update("events", key: 101, ["title": "team 1's edit"])
                try changes.update("events", key: 102, ["title": "team 1's second edit"])
            }
            token.set(try await TestIdentityProvider.teamToken([1]))
            let events = LockedValue([ImportEvent]())
            let engine = SyncEngine(configuration: configuration, options: .init(wait: 1)) { event in
                events.set(events.get() + [event])
            }
            let observed = Task { () -> [ObservedRow] in
                var seen: [ObservedRow] = []
                for await row in await engine.observe(type: "events", key: 201) {
                    seen.append(row)
                    if seen.count == 3 { break }
                }
                return seen
            }
            await engine.start()
            let app = served.path("app.sqlite")
            try await SyncEngineTests.eventually("team 2's rows to leave") {
                try contents(ofSeed: app) == (try await Fixtures.contents(of: store, grant: .only([1])))
            }
            let rejected = events.get().compactMap { event -> String? in
                if case .rejected(_, let code, let message) = event { "\(code): \(message)" } else { nil }
            }
            #expect(rejected.count == 1)
            #expect(rejected.first?.hasPrefix("scope_revoked: events[201] belongs to team 2") == true)
            #expect(try await Self.title(of: 101, in: store) == "team 1's edit", "team 1's edit is pushed")
            #expect(try await Self.title(of: 102, in: store) == "team 1's second edit")
            #expect(try await Self.title(of: 201, in: store) == "team 2 event 1", "team 2's edit is not")
            #expect(try SeedFile.read(app) { try $0.metadata().scopes } == [1])
            let deletes = events.get().flatMap { event -> [JSONValue] in
                if case .applied(let set) = event { set.types["events"]?.deleted ?? [] } else { [] }
            }
            #expect(deletes == [201, 202, 203], "the app is told which rows left")

            // While team 2 is not granted: its event is renamed, one of team 1's moves to it, one of
            // its own moves to team 3. Pages read after these, the change sets replayed over them.
            try await store.commit(Fixtures.clubsRetitle(202, team: 2, "renamed while not granted"))
            try await store.commit(Self.move(103, to: 2))
            try await store.commit(Self.move(203, to: 3))
            token.set(both)
            await engine.syncNow()
            try await SyncEngineTests.eventually("team 2's rows to come back") {
                try contents(ofSeed: app) == (try await Fixtures.contents(of: store, grant: .only([1, 2])))
            }
            #expect(try SeedFile.read(app) { try $0.metadata().scopes } == [1, 2])
            let gains = events.get().compactMap { event -> ScopeGain? in
                if case .scopesGained(let gain) = event { gain } else { nil }
            }
            // Team 2's rows alone were downloaded, not team 1's or the shared venues again.
            let teamTwo = try await Fixtures.contents(of: store, grant: .only([2]))
            let sharedOnly = try await Fixtures.contents(of: store, grant: .only([]))
            let teamTwoRows = teamTwo.values.map(\.count).reduce(0, +) - sharedOnly.values.map(\.count).reduce(0, +)
            #expect(gains.map(\.values) == [[2]] && gains.first?.rowsDownloaded == teamTwoRows)
            #expect(!events.get().contains { if case .replaced = $0 { true } else { false } }, "nothing replaced")
            let seen = try await observed.value.map { $0.fields?["title"] }
            #expect(seen == ["team 2's edit", nil, "team 2 event 1"])
            await engine.stop()
        }
    }

    /// A seed of another team is refused before it is installed, with a message that says so; a
    /// seed of every team is installed, and the rows the token does not read leave it at once.
    @Test(arguments: StoreBackend.tested) func aSeedOfOtherTeamsIsRefusedAndOneOfAllIsTrimmed(backend: StoreBackend)
        async throws
    {
        try await Self.withTeams(backend) { store, url, served in
            let one = try await TestIdentityProvider.teamToken([1])
            let two = try await TestIdentityProvider.teamToken([2])
            let teamOne = try await served.builder("team-1.sqlite", token: one).build().output
            let everyTeam = try await served.builder("all.sqlite").build().output
            func importer(_ seed: String, _ database: String, _ token: String) -> SeedImporter {
                SeedImporter(
                    configuration: .init(
                        seed: seed, database: served.path(database),
                        server: .init(serverURL: url, token: token, requestTimeout: 10, retry: .none)))
            }
            let error = try await #require(throws: ImportError.self) {
                try await importer(teamOne, "two.sqlite", two).run()
            }
            #expect(error.code == .mismatch)
            #expect(
                error.description.contains("holds the rows of team 1, which the token does not grant (it grants 2)")
            )
            #expect(!FileManager.default.fileExists(atPath: served.path("two.sqlite")))

            let report = try await importer(everyTeam, "one.sqlite", one).run()
            #expect(report.installed)
            #expect(
                try contents(ofSeed: served.path("one.sqlite"))
                    == (try await Fixtures.contents(of: store, grant: .only([1]))))
            #expect(try SeedFile.read(served.path("one.sqlite")) { try $0.metadata().scopes } == [1])
        }
    }

    /// A fresh app with no seed is offered its team's published seed, and weighs it against a
    /// snapshot (these teams are small: the snapshot is the fewer bytes); an app of two teams is
    /// offered each team's seed but neither holds all its rows: it weighs none, and takes a snapshot.
    @Test(arguments: StoreBackend.tested) func aFreshAppWithNoSeedWeighsItsTeamsSeed(backend: StoreBackend)
        async throws
    {
        try await Self.withTeams(backend) { store, url, served in
            let report = try await Self.buildEveryTeamsSeed(served)
            let teamOne = try #require(report.scopeSeeds?.first { $0.value == 1 })
            try await store.commit(Fixtures.clubsRetitle(101, team: 1, "after the seeds"))
            for (teams, offered) in [([JSONValue.int(1)], true), ([1, 2], false)] {
                let database = served.path("app-\(teams.count).sqlite")
                let token = try await TestIdentityProvider.teamToken(teams)
                let run = try await SeedImporter(
                    configuration: .init(
                        seed: "", database: database,
                        server: .init(serverURL: url, token: token, requestTimeout: 10, retry: .none))
                ).run()
                let way = try #require(run.wayIn, "teams \(teams)")
                let seeds = way.weighed.filter { $0.source.kind == .publishedSeed }
                #expect(seeds.count == (offered ? 1 : 0), "teams \(teams): \(way)")
                if offered {
                    #expect(seeds[0].source.location.hasSuffix("\(teamOne.manifest.sha256)/clubs.team-1.sqlite.gz"))
                    #expect(seeds[0].fileBytes == teamOne.manifest.gzip?.size && seeds[0].catchUpBytes > 0)
                }
                #expect(run.installedFrom == way.taken.source && way.taken.source.kind == .snapshot, "\(way)")
                #expect(
                    try contents(ofSeed: database) == (try await Fixtures.contents(of: store, grant: .only(teams))))
            }
        }
    }

    /// One build with a token of every team cuts a seed per team: each holds its team's rows and
    /// the shared ones, says so, verifies, and is byte for byte the seed that team's own token
    /// builds; an app installed from one catches up its team alone.
    @Test(arguments: StoreBackend.tested) func oneBuildCutsASeedPerTeamEqualToEachTeamsOwnBuild(
        backend: StoreBackend
    ) async throws {
        try await Self.withTeams(backend) { store, url, served in
            try await store.commit(Self.move(201, to: 1))
            do {
                let report = try await Self.buildEveryTeamsSeed(served)
                let cut = try #require(report.scopeSeeds)
                #expect(cut.map(\.value) == [1, 2, 3])
                // Each seed registered with its team, so the server offers it to that team's readers.
                #expect(report.registered?.scopes == nil && cut.map { $0.registered?.scopes } == [[1], [2], [3]])
                #expect(try await store.registeredSeeds().count == 4)
                #expect(
                    cut.map { URL(fileURLWithPath: $0.output).lastPathComponent } == [
                        "clubs.team-1.sqlite", "clubs.team-2.sqlite", "clubs.team-3.sqlite",
                    ])
                for seed in cut {
                    let grant = ScopeGrant.only([seed.value])
                    #expect(try contents(ofSeed: seed.output) == (try await Fixtures.contents(of: store, grant: grant)))
                    #expect(seed.manifest.scopes == [seed.value])
                    #expect(seed.manifest.gzip != nil)
                    let verified = try await SeedVerifier.verify(seed.output)
                    #expect(verified.passed, "\(verified.failures)")
                    let token = try await TestIdentityProvider.teamToken([seed.value])
                    let own = try await served.builder("own-\(seed.value.keyString!).sqlite", token: token).build()
                    #expect(own.manifest.sha256 == seed.manifest.sha256, "team \(seed.value)'s own build")
                }
                #expect(try contents(ofSeed: cut[0].output)["events"]?.map { $0[0] } == [101, 102, 103, 201])

                let one = try await TestIdentityProvider.teamToken([1])
                try await store.commit(Self.move(102, to: 3))
                try await store.commit(Fixtures.clubsRetitle(301, team: 3, "team 3's alone"))
                let importer = SeedImporter(
                    configuration: .init(
                        seed: cut[0].output, database: served.path("app.sqlite"),
                        server: .init(serverURL: url, token: one, requestTimeout: 10, retry: .none)))
                _ = try await importer.run()
                #expect(
                    try contents(ofSeed: served.path("app.sqlite"))
                        == (try await Fixtures.contents(of: store, grant: .only([1]))))

                let partial = try await SeedBuilder(
                    client: served.client(),
                    options: .init(
                        output: served.path("some/clubs.sqlite"), scopes: .only(scope: "team", values: ["2", "9"]))
                ).build()
                #expect(partial.scopeSeeds?.map(\.value) == [2, 9])
                #expect(try contents(ofSeed: served.path("some/clubs.team-9.sqlite"))["events"] == [])
                #expect(try contents(ofSeed: served.path("some/clubs.team-9.sqlite"))["venues"]?.count == 1)
                let refused = try await #require(throws: SeedError.self) {
                    try await SeedBuilder(
                        client: served.client(token: try await TestIdentityProvider.teamToken([2])),
                        options: .init(output: served.path("cut-by-two.sqlite"), scopes: .every)
                    ).build()
                }
                #expect(refused.description.contains("with a token of every value"))
                #expect(!FileManager.default.fileExists(atPath: served.path("cut-by-two.sqlite")))
            }
        }
    }

    /// A build is not resumed from a work file another grant started (it would mix two teams'
    /// rows), and `seed-verify` fails a seed whose manifest names other scope values than its
    /// metadata.
    @Test(arguments: StoreBackend.tested) func aTeamsWorkFileIsNotResumedByAnotherAndAManifestMustNameItsValues(
        backend: StoreBackend
    ) async throws {
        try await Self.withTeams(backend) { store, url, served in
            let one = try await TestIdentityProvider.teamToken([1])
            let two = try await TestIdentityProvider.teamToken([2])
            let output = served.path("team.sqlite")
            let info = try await served.client(token: two).schema()
            let started = try await SeedWriter.create(
                at: output + ".partial", schema: info.schema, revision: info.revision, scopes: [2])
            try started.close()
            let error = try await #require(throws: SeedError.self) {
                try await served.builder("team.sqlite", resume: true, token: one).build()
            }
            #expect(error.code == .notResumable)
            #expect(error.description.contains("started with a token of other scope values"))
            #expect(!FileManager.default.fileExists(atPath: output))

            let report = try await served.builder("team.sqlite", token: one).build()
            #expect(try await SeedVerifier.verify(report.output).passed)
            var manifest = report.manifest
            manifest.scopes = [2]
            try manifest.jsonData().write(to: URL(fileURLWithPath: report.manifestPath))
            let verified = try await SeedVerifier.verify(report.output)
            #expect(!verified.passed)
            #expect(verified.failures.contains { $0.detail.contains("scope values 2, the seed has 1") })
        }
    }

    /// An app of team 1 migrates in place to a version that adds a column, its log read with
    /// gaps (change sets of team 2 before and after the upgrade): the staged change sets follow
    /// the gaps, and the database equals team 1's rows in the new version.
    @Test(arguments: StoreBackend.tested) func anAppOfOneTeamMigratesInPlaceThroughTheGapsOfItsLog(
        backend: StoreBackend
    ) async throws {
        try await Self.withTeams(backend) { store, url, served in
            let one = try await TestIdentityProvider.teamToken([1])
            let seed = try await served.builder("team-1.sqlite", token: one).build().output
            let configuration = SeedImporter.Configuration(
                seed: seed, database: served.path("app.sqlite"),
                server: .init(serverURL: url, token: one, requestTimeout: 10, retry: .none))
            _ = try await SeedImporter(configuration: configuration).run()
            try await store.commit(Fixtures.clubsRetitle(201, team: 2, "team 2, version 1"))
            try await store.commit(Fixtures.clubsRetitle(101, team: 1, "team 1, version 1"))
            var v2 = Fixtures.clubsSchema
            v2.schemaVersion = 2
            v2.types[2].fields.append(Field(name: "notes", type: .text, nullable: true))
            _ = try await backend.upgrade(store, to: v2, alterations: "ALTER TABLE events ADD COLUMN notes text")
            for (event, team) in [(202, 2), (102, 1), (203, 2)] as [(Int64, Int64)] {
                try await store.commit(
                    ChangeSet(changes: [
                        TypeChanges(
                            type: "events", update: [.int(event)],
                            attributes: [
                                String(event): [
                                    "team_id": .int(team), "title": "version 2", "venue_id": 1, "notes": "noted",
                                ]
                            ])
                    ]))
            }
            let report = try await SeedImporter(configuration: configuration).run()
            #expect(report.migration?.toVersion == 2 && report.schemaVersion == 2)
            #expect(
                try contents(ofSeed: served.path("app.sqlite"))
                    == (try await Fixtures.contents(of: store, grant: .only([1]))))
            #expect(try revision(of: served.path("app.sqlite")) == (try await store.revisions().revision))
        }
    }

    /// Runs `body` with a clubs store of `backend` (teams 1-3, as `Fixtures.clubsStore`) served
    /// live, taking the team JWTs of `TestIdentityProvider.teamJWT`.
    static func withTeams(
        _ backend: StoreBackend, answerKey: Curve25519.Signing.PrivateKey? = nil,
        _ body: @escaping @Sendable (any MaintainedSyncStore, URL, ServedStore) async throws -> Void
    ) async throws {
        try await backend.withStore(Fixtures.clubsSchema) { store in
            try await store.commit(Fixtures.clubsCreation(teams: 1...3, eventsPerTeam: 3))
            try await withTemporaryDirectory { directory in
                // The server publishes the seeds built into `seeds/` (`serve --seeds`).
                let seeds = directory.appendingPathComponent("seeds").path
                try await withLiveServer(
                    store,
                    configure: {
                        $0.jwt = TestIdentityProvider.teamJWT
                        $0.seedsFolder = seeds
                        $0.answerKey = answerKey
                    }
                ) { url in
                    try await body(store, url, ServedStore(url: url, store: store, directory: directory))
                }
            }
        }
    }

    /// One registered build into the server's published `seeds/` folder (with its `.gz`) that also
    /// cuts a seed per team (`--every-scope`).
    static func buildEveryTeamsSeed(_ served: ServedStore) async throws -> BuildReport {
        try await SeedBuilder(
            client: served.client(token: liveServerAdminToken),
            options: .init(
                output: served.path("seeds/clubs.sqlite"), pageSize: 2, gzip: true, register: true, scopes: .every)
        ).build()
    }

    /// The title of `event` in `store`.
    static func title(of event: Int64, in store: any SyncStore) async throws -> JSONValue? {
        try await Fixtures.contents(of: store)["events"]?.first { $0[0] == .int(event) }?[2]
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

}
