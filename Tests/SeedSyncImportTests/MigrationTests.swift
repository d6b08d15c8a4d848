import Foundation
import GRDB
import SeedSyncBuild
import SeedSyncClient
import SeedSyncDemo
import SeedSyncImport
import SeedSyncModel
import SeedSyncSeed
import SeedSyncTesting
import Testing

/// An installed app database moving to a newer schema version in place: equal to a fresh seed of
/// the new version, its local edits kept, never half-migrated.
@Suite struct MigrationTests {
    /// An app database on version 1, then the server upgraded to version 2 and changed in it.
    func withUpgradedServer(
        snapshotMaxAge: Duration = .seconds(30), _ body: @escaping @Sendable (ImportFixture) async throws -> Void
    ) async throws {
        try await withImportFixture(snapshotMaxAge: snapshotMaxAge) { fixture in
            try await fixture.importer().run()
            _ = try await fixture.served.store.upgrade(to: DemoDataset.schemaV2, renaming: DemoDataset.v2Renames)
            try await fixture.mutate(40, seed: 31)
            try await body(fixture)
        }
    }

    @Test func anAppStaysOnItsVersionThenMigratesInPlaceEqualToAFreshSeed() async throws {
        try await withUpgradedServer { fixture in
            // An app that expects version 1 keeps syncing in it while the server serves 1 and 2.
            let old = try await fixture.importer(expectedSchemaVersion: 1).run()
            #expect(old.schemaVersion == 1 && old.migration == nil && old.changeSets == 40)
            // Equal to the server in version 1, but for the dropped field: the server sends it as null
            // (it has no value any more), the app keeps the values it had, and null for rows written since.
            let server = try await Fixtures.contents(of: fixture.served.store, version: 1)
            let local = try contents(ofSeed: fixture.database)
            #expect(local.mapValues { $0.map(withoutDescription) } == server.mapValues { $0.map(withoutDescription) })
            #expect(server["events"]?.allSatisfy { $0[7] == .null } == true)
            #expect(local["events"]?.contains { $0[7] != .null } == true)
            // The app update: version 2.
            var events: [ImportEvent] = []
            for try await event in fixture.importer().events() { events.append(event) }
            guard case .finished(let report) = events.last, let migration = report.migration else {
                Issue.record("no migration: \(events)")
                return
            }
            #expect(events.contains(.migrating(from: 1, to: 2)))
            #expect(report.schemaVersion == 2 && migration.fromVersion == 1 && migration.toVersion == 2)
            #expect(
                migration.changes == [
                    "events.title renamed to name", "events.description dropped", "events.notes added",
                    "events.venue_id added", "type venues added",
                ])
            let fresh = try await fixture.buildSeed("v2.sqlite")
            let migrated = try contents(ofSeed: fixture.database)
            #expect(migrated == (try contents(ofSeed: fresh)))
            #expect(migrated == (try await Fixtures.contents(of: fixture.served.store)))
            #expect(try revision(of: fixture.database) == revision(of: fresh))
            // The column download brings the keys and the new fields, not the whole events.
            let metadata = try SeedFile(path: fixture.database).metadata()
            #expect(metadata.schema == DemoDataset.schemaV2 && metadata.schemaHash == DemoDataset.schemaV2.hash)
            let again = try await fixture.importer().run()
            #expect(again.migration == nil && again.changeSets == 0)
            // More changes flow in version 2.
            try await fixture.mutate(20, seed: 32)
            try await fixture.importer().run()
            #expect(try contents(ofSeed: fixture.database) == (try await Fixtures.contents(of: fixture.served.store)))
        }
    }

    /// The server keeps the column pages another app's migration read. This app migrates from a
    /// later revision (its change sets are staged from there), so it asks for pages read since
    /// (`notBefore`): a kept page would miss what changed in the new fields in between.
    @Test func aMigrationUsesNoPageOlderThanItsRevision() async throws {
        // Pages kept an hour: they are still there for this app however loaded the machine.
        try await withUpgradedServer(snapshotMaxAge: .seconds(3_600)) { fixture in
            let other = fixture.served.path("other/events.sqlite")
            let first = try await fixture.importer(database: other).run()
            #expect(first.migration != nil)
            let before = try await Fixtures.contents(of: fixture.served.store)
            try await fixture.mutate(30, seed: 33)
            // What the column download carries changes: a kept page would hold the old values.
            let after = try await Fixtures.contents(of: fixture.served.store)
            #expect(Self.newEventFields(before) != Self.newEventFields(after))
            let caughtUp = try await fixture.importer(expectedSchemaVersion: 1).run()
            #expect(caughtUp.migration == nil && caughtUp.changeSets >= 30)
            let report = try await fixture.importer().run()
            #expect(report.migration?.fromRevision == caughtUp.toRevision)
            #expect(try contents(ofSeed: fixture.database) == (try await Fixtures.contents(of: fixture.served.store)))
        }
    }

    /// The fields version 2 adds to events, by key, in server contents.
    static func newEventFields(_ contents: [String: [[JSONValue]]]) -> [JSONValue: [JSONValue]] {
        let columns = DemoDataset.schemaV2.type(named: "events")!.columnNames
        let added = ["notes", "venue_id"].compactMap { columns.firstIndex(of: $0) }
        return Dictionary(
            uniqueKeysWithValues: (contents["events"] ?? []).map { row in (row[0], added.map { row[$0] }) })
    }

    /// Version 1 with two fields added to events: `notes`, non-null with a default, and `rating`,
    /// nullable without one: every row holds the same value in each when they are added.
    static let withDefaults: DatasetSchema = {
        var schema = DemoDataset.schema
        schema.schemaVersion = 2
        let events = schema.types.firstIndex { $0.name == "events" }!
        schema.types[events].fields += [
            Field(name: "notes", type: .text, default: "no notes yet"),
            Field(name: "rating", type: .integer, nullable: true),
        ]
        return schema
    }()

    /// A column added with a default (and one added null) is not downloaded row by row: the server
    /// says every row holds one value, the app fills it in and catches up from its revision. A
    /// column that stops being uniform while an app migrates (the server's kept answer is older
    /// than the writes) is brought right by the catch-up; an app past the kept answer's revision
    /// reads it afresh and downloads the column that now differs. On every store.
    @Test(arguments: StoreBackend.tested) func aColumnAddedWithADefaultIsFilledInNotDownloaded(
        backend: StoreBackend
    ) async throws {
        try await backend.withDemoStore(events: 200, locations: 10, seed: 3) { store in
            try await withLiveServer(store, configure: { $0.snapshotMaxAge = .seconds(3_600) }) { url in
                try await withTemporaryDirectory { directory in
                    let served = ServedStore(url: url, store: store, directory: directory)
                    let seed = try await served.builder("v1.sqlite").build().output
                    @Sendable func importer(_ name: String, through server: URL? = nil) -> SeedImporter {
                        SeedImporter(
                            configuration: .init(
                                seed: seed, database: served.path("\(name)/app.sqlite"),
                                server: .init(
                                    serverURL: server ?? url, token: liveServerToken, requestTimeout: 10, retry: .none))
                        )
                    }
                    for name in ["a", "b", "c"] { try await importer(name).run() }
                    try await backend.upgrade(
                        store, to: Self.withDefaults,
                        alterations:
                            "ALTER TABLE public.events ADD COLUMN notes text NOT NULL DEFAULT 'no notes yet', ADD COLUMN rating bigint"
                    )
                    let columns = Self.withDefaults.type(named: "events")!.columnNames
                    let notes = try #require(columns.firstIndex(of: "notes"))
                    let rating = try #require(columns.firstIndex(of: "rating"))

                    // Every event then takes one note other than the default, which the apps
                    // catch up in version 1 (without notes) before they migrate from there.
                    try await store.commit(
                        Self.noting(try await Fixtures.contents(of: store), "to be announced", at: notes))
                    let a = try #require(try await importer("a").run().migration)
                    #expect(a.fieldsFilled == ["events.notes", "events.rating"] && a.rowsDownloaded == 0)
                    let upgraded = try await Fixtures.contents(of: store)
                    #expect(
                        upgraded["events"]?.allSatisfy { $0[notes] == "to be announced" && $0[rating] == .null } == true
                    )
                    #expect(try contents(ofSeed: served.path("a/app.sqlite")) == upgraded)

                    // Notes stop being uniform while b migrates: written just after the server
                    // answered that they were, before b reads the change sets.
                    try await withAlteringProxy(to: url) { answer in
                        if answer.path.hasSuffix("/uniform") {
                            try await ChangeGenerator.mutate(store, changes: 12, seed: 7)
                        }
                        return answer
                    } _: { proxy in
                        let b = try #require(try await importer("b", through: proxy).run().migration)
                        #expect(b.fieldsFilled == ["events.notes", "events.rating"] && b.rowsDownloaded == 0)
                    }
                    let changed = try await Fixtures.contents(of: store)
                    #expect(changed["events"]?.contains { $0[notes] != "to be announced" } == true)
                    #expect(try contents(ofSeed: served.path("b/app.sqlite")) == changed)

                    // c migrates after the writes: the answer a and b read is kept (an hour), but
                    // read before c's revision, so the server reads again and notes are downloaded.
                    let c = try #require(try await importer("c").run().migration)
                    #expect(!c.fieldsFilled.contains("events.notes") && c.rowsDownloaded == changed["events"]?.count)
                    #expect(try contents(ofSeed: served.path("c/app.sqlite")) == changed)
                }
            }
        }
    }

    /// A uniform-fields answer read before the app's revision (a cache that keys it without the
    /// query hands out an old one) could say a field is uniform that a change set before the app's
    /// revision wrote: it is refused, and the database stays at its version and revision.
    @Test func aUniformAnswerReadBeforeTheAppsRevisionIsRefused() async throws {
        try await withUpgradedServer { fixture in
            let before = try revision(of: fixture.database)
            try await withAlteringProxy(to: fixture.served.url) { answer in
                guard answer.path.hasSuffix("/uniform"), answer.status == 200 else { return answer }
                var old = try UniformFields(json: JSONParser.parse(Array(answer.body)))
                old.revision = 1
                var stale = answer
                stale.body = Data(old.jsonBytes())
                return stale
            } _: { proxy in
                let importer = SeedImporter(
                    configuration: .init(
                        seed: fixture.seed, database: fixture.database,
                        server: .init(serverURL: proxy, token: liveServerToken, requestTimeout: 10, retry: .none)))
                await #expect {
                    try await importer.run()
                } throws: { error in
                    (error as? SyncClientError)?.code == .malformedResponse && "\(error)".contains("revision 1")
                }
            }
            let metadata = try SeedFile(path: fixture.database).metadata()
            #expect(metadata.schemaVersion == 1 && metadata.revision >= before)
        }
    }

    /// A server from before `GET /v1/snapshot/{type}/uniform` (its 404 names no error code): the
    /// new columns are downloaded, as they were then.
    @Test func aServerWithoutUniformFieldsHasItsColumnsDownloaded() async throws {
        try await withUpgradedServer { fixture in
            try await withAlteringProxy(to: fixture.served.url) { answer in
                guard answer.path.hasSuffix("/uniform") else { return answer }
                var missing = answer
                (missing.status, missing.body, missing.headers) = (404, Data(), [:])
                return missing
            } _: { proxy in
                let report = try await SeedImporter(
                    configuration: .init(
                        seed: fixture.seed, database: fixture.database,
                        server: .init(serverURL: proxy, token: liveServerToken, requestTimeout: 10, retry: .none))
                ).run()
                let migration = try #require(report.migration)
                #expect(migration.fieldsFilled.isEmpty && migration.rowsDownloaded > 0)
                #expect(
                    try contents(ofSeed: fixture.database) == (try await Fixtures.contents(of: fixture.served.store)))
            }
        }
    }

    /// A change set that sets `note` (at column `index`) in every event of `contents`, whole rows.
    static func noting(_ contents: [String: [[JSONValue]]], _ note: String, at index: Int) -> ChangeSet {
        let columns = withDefaults.type(named: "events")!.columnNames
        var events = TypeChanges(type: "events")
        for row in contents["events"] ?? [] {
            var attributes: [String: JSONValue] = [:]
            for (column, value) in zip(columns.dropFirst().dropLast(), row.dropFirst().dropLast()) {
                attributes[column] = value
            }
            attributes[columns[index]] = .string(note)
            events.update.append(row[0])
            events.attributes[row[0].keyString!] = attributes
        }
        return ChangeSet(changes: [events])
    }

    /// Seeds of a newer version are byte-identical however they are paged, like any seed.
    @Test func seedsOfTheNewVersionAreByteIdentical() async throws {
        try await withUpgradedServer { fixture in
            let small = try await fixture.served.builder("v2-small.sqlite", pageSize: 7).build()
            let large = try await fixture.served.builder("v2-large.sqlite", pageSize: 500).build()
            #expect(small.manifest.schemaVersion == 2 && small.manifest.sha256 == large.manifest.sha256)
            // And a seed of the old version can still be built while the server serves both.
            let old = try await SeedBuilder(
                client: fixture.served.client(),
                options: .init(output: fixture.served.path("v1.sqlite"), schemaVersion: 1)
            ).build()
            #expect(old.manifest.schemaVersion == 1 && old.manifest.revision == small.manifest.revision)
        }
    }

    /// Edits waiting in the outbox (a token that may not push) go through the migration rewritten
    /// for version 2, and are pushed as such later.
    @Test func pendingLocalEditsAreCarriedThroughAMigration() async throws {
        try await withImportFixture { fixture in
            try await fixture.importer().run()
            let event = try #require(try await fixture.served.store.keys(of: "events").first)
            try await fixture.importer().write { changes in
                try changes.update("events", key: event, ["title": "Renamed here", "description": "kept local"])
                _ = try changes.create(
                    "events",
                    [
                        "title": "New here", "starts_at": "2026-12-01T20:00:00Z", "capacity": 10, "cancelled": false,
                    ])
            }
            _ = try await fixture.served.store.upgrade(to: DemoDataset.schemaV2, renaming: DemoDataset.v2Renames)
            await #expect { try await fixture.importer().run() } throws: {
                ($0 as? ImportError)?.code == .pushForbidden
            }
            let row = try #require(try localRow(of: fixture.database, event: event))
            #expect(row["name"] == "Renamed here" && row["notes"] == .null)
            #expect(try outbox(of: fixture.database).contains("\"name\":\"Renamed here\""))
            #expect(try outbox(of: fixture.database).contains("description") == false)
            let pushed = try await fixture.importer(token: liveServerWriteToken).run()
            #expect(pushed.pushed == 1 && pushed.pending == 0 && pushed.schemaVersion == 2)
            let server = try await Fixtures.contents(of: fixture.served.store)
            #expect(server["events"]?.contains { $0[0] == event && $0[1] == "Renamed here" } == true)
            #expect(server["events"]?.contains { $0[1] == "New here" } == true)
            #expect(try contents(ofSeed: fixture.database) == server)
        }
    }

    /// A seed of the new version does not replace an installed database: it migrates. A seed newer
    /// than the app expects is refused; an older one is installed, then migrated.
    @Test func seedsOfOtherVersions() async throws {
        try await withUpgradedServer { fixture in
            let v2 = try await fixture.buildSeed("v2.sqlite")
            let report = try await fixture.importer(seed: v2).run()
            #expect(report.replacements.isEmpty && report.migration?.toVersion == 2)
            let fresh = fixture.served.path("fresh/events.sqlite")
            await #expect {
                try await fixture.importer(seed: v2, database: fresh, expectedSchemaVersion: 1).run()
            } throws: {
                ($0 as? ImportError)?.code == .invalidSeed && "\($0)".contains("newer than the 1 this app expects")
            }
            #expect(!FileManager.default.fileExists(atPath: fresh))
            let installed = try await fixture.importer(database: fresh, expectedSchemaVersion: 2).run()
            #expect(installed.installed && installed.migration?.fromVersion == 1 && installed.schemaVersion == 2)
            #expect(try contents(ofSeed: fresh) == (try await Fixtures.contents(of: fixture.served.store)))
            // A database newer than the app expects is refused.
            await #expect { try await fixture.importer(database: fresh, expectedSchemaVersion: 1).run() } throws: {
                ($0 as? ImportError)?.code == .invalidDatabase && "\($0)".contains("newer than the 1 this app expects")
            }
        }
    }

    /// An app built for a version the server does not serve yet stays on the one it has.
    @Test func anAppAheadOfTheServerStaysOnTheVersionItHas() async throws {
        try await withImportFixture { fixture in
            let report = try await fixture.importer(expectedSchemaVersion: 2).run()
            #expect(report.installed && report.schemaVersion == 1 && report.migration == nil)
        }
    }

    /// A migration that fails while it downloads leaves the database at its version, and the
    /// staging file is gone; the next run starts over and finishes.
    @Test func aFailedMigrationLeavesTheDatabaseAsItWas() async throws {
        try await withUpgradedServer { fixture in
            let before = try contents(ofSeed: fixture.database)
            let version = try SeedFile(path: fixture.database).metadata().schemaVersion
            #expect(version == 1)
            // A token the server refuses fails the first request of the run, before anything.
            await #expect { try await fixture.importer(token: "wrong").run() } throws: { _ in true }
            #expect(try contents(ofSeed: fixture.database) == before)
            #expect(!FileManager.default.fileExists(atPath: fixture.database + ".migration"))
            try await fixture.importer().run()
            #expect(try SeedFile(path: fixture.database).metadata().schemaVersion == 2)
        }
    }

    /// An events row without `description` (index 7 in version 1); other types' rows as they are.
    private func withoutDescription(_ row: [JSONValue]) -> [JSONValue] {
        row.count == 9 ? Array(row[0..<7]) + [row[8]] : row
    }

    private func localRow(of database: String, event: JSONValue) throws -> [String: JSONValue]? {
        let queue = try DatabaseQueue(path: database)
        defer { try? queue.close() }
        return try queue.read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT * FROM events WHERE id = ?", arguments: [event.intValue])
            else { return nil }
            var values: [String: JSONValue] = [:]
            for (name, value) in row {
                switch value.storage {
                case .null: values[name] = .null
                case .int64(let number): values[name] = .int(number)
                case .double(let number): values[name] = .double(number)
                case .string(let text): values[name] = .string(text)
                case .blob: values[name] = .null
                }
            }
            return values
        }
    }

    private func outbox(of database: String) throws -> String {
        let queue = try DatabaseQueue(path: database)
        defer { try? queue.close() }
        return try queue.read { db in
            try String.fetchAll(db, sql: "SELECT change_set FROM _seedsync_outbox").joined(separator: "\n")
        }
    }
}
