import Foundation
import GRDB
import SeedSyncDemo
import SeedSyncImport
import SeedSyncModel
import SeedSyncTesting
import Testing

/// The app's own GRDB connection handed to the importer and the engine: its `ValueObservation`s
/// see the install, each synced change set, a replacement and local writes; a database that is not
/// SeedSync's, or a connection that cannot hold one, is refused untouched.
@Suite(.timeLimit(.minutes(3))) struct AppDatabaseTests {
    @Test func theAppsPoolTakesTheSeedThenObservesEveryServerChange() async throws {
        try await withImportFixture { fixture in
            let pool = try Self.emptyPool(at: fixture.database)
            let engine = SyncEngine(
                configuration: fixture.importer().configuration, database: pool, options: .init(wait: 55))
            await engine.start()
            try await SyncEngineTests.until(engine, "waiting") { if case .waiting = $0 { true } else { false } }
            #expect(try await pool.read(storedRevision) == (try await fixture.serverRevision()))
            #expect(try contents(ofSeed: fixture.database) == (try await fixture.serverContents()))

            let (seen, observing) = Self.observeEvents(in: pool)
            try await SyncEngineTests.eventually("the first value") { !seen.value.isEmpty }
            try await fixture.mutate(3, seed: 5)
            let target = try await fixture.serverRevision()
            try await SyncEngineTests.eventually("the server's changes in the app's observation") {
                guard try await pool.read(storedRevision) == target else { return false }
                return seen.value.last == (try await pool.read(Self.events))
            }
            #expect(seen.value.count >= 2)
            #expect(try contents(ofSeed: fixture.database) == (try await fixture.serverContents()))
            observing.cancel()
            await engine.stop()
            #expect(
                try await pool.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM events") } ?? 0 > 0,
                "stopping the engine leaves the app's pool open")
        }
    }

    /// The pool is opened on the installed database; the newer seed replaces it in place and the
    /// server has nothing after it, so only the replacement can make the observation fetch again.
    @Test func aReplacementReachesTheAppsObservation() async throws {
        try await withImportFixture { fixture in
            let (_, newer, newerRevision) = try await fixture.installThenBuildNewerSeed(after: 5)
            let pool = try DatabasePool(path: fixture.database)
            let (seen, observing) = Self.observeEvents(in: pool)
            defer { observing.cancel() }
            try await SyncEngineTests.eventually("the first value") { !seen.value.isEmpty }
            let installed = seen.value.first
            let replaced = Locked(false)
            let importer = SeedImporter(configuration: fixture.importer(seed: newer).configuration, database: pool)
            try await importer.run { event in
                if case .replaced = event { replaced.update { $0 = true } }
            }
            #expect(replaced.value)
            #expect(try await pool.read(storedRevision) == newerRevision)
            let expected = try await pool.read(Self.events)
            #expect(expected != installed, "the newer seed changed events")
            try await SyncEngineTests.eventually("the replaced rows in the app's observation") {
                seen.value.last == expected
            }
        }
    }

    /// A migration alters the tables under the app's pool: the observation fetches the new shape.
    @Test func aMigrationInPlaceReachesTheAppsObservation() async throws {
        try await withImportFixture { fixture in
            try await fixture.importer().run()
            _ = try await fixture.served.store.upgrade(to: DemoDataset.schemaV2, renaming: DemoDataset.v2Renames)
            try await fixture.mutate(10, seed: 31)
            let pool = try DatabasePool(path: fixture.database)
            let (seen, observing) = Self.observeEvents(in: pool)
            defer { observing.cancel() }
            try await SyncEngineTests.eventually("the first value") { !seen.value.isEmpty }
            let report = try await SeedImporter(configuration: fixture.importer().configuration, database: pool).run()
            #expect(report.migration?.toVersion == 2)
            #expect(try await pool.read { db in try db.columns(in: "events").contains { $0.name == "notes" } })
            let expected = try await pool.read(Self.events)
            try await SyncEngineTests.eventually("the migrated rows in the app's observation") {
                seen.value.last == expected
            }
            #expect(try contents(ofSeed: fixture.database) == (try await Fixtures.contents(of: fixture.served.store)))
        }
    }

    @Test func aLocalWriteThroughTheAppsQueueIsObservedAndPushed() async throws {
        try await withImportFixture { fixture in
            let queue = try Self.emptyQueue(at: fixture.database)
            // The app's own checkpoint setting, which the importer's transactions turn off for their commits only.
            try await queue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA wal_autocheckpoint = 321") }
            let importer = SeedImporter(
                configuration: fixture.importer(token: liveServerWriteToken).configuration, database: queue)
            try await importer.run()
            let names = Locked<[[String]]>([])
            let observation = ValueObservation.tracking { db in
                try String.fetchAll(db, sql: "SELECT name FROM locations ORDER BY name")
            }
            let observing = Task {
                for try await value in observation.values(in: queue) { names.update { $0.append(value) } }
            }
            defer { observing.cancel() }
            try await importer.write { changes in
                try changes.create("locations", ["name": "Pier", "city": "Oslo", "latitude": 59.9, "longitude": 10.7])
            }
            try await SyncEngineTests.eventually("the local row in the app's observation") {
                names.value.last?.contains("Pier") == true
            }
            #expect(try await importer.pendingChangeSets() == 1)
            try await importer.run()
            #expect(try await importer.pendingChangeSets() == 0)
            #expect(try contents(ofSeed: fixture.database) == (try await fixture.serverContents()))
            #expect(try await queue.read { db in try Int.fetchOne(db, sql: "PRAGMA wal_autocheckpoint") } == 321)
        }
    }

    @Test func aDatabaseWithTheAppsOwnTablesIsRefusedUntouched() async throws {
        try await withImportFixture { fixture in
            let queue = try Self.emptyQueue(at: fixture.database)
            try await queue.write { db in try db.execute(sql: "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)")
            }
            let error = await #expect(throws: ImportError.self) {
                try await SeedImporter(configuration: fixture.importer().configuration, database: queue).run()
            }
            #expect(error?.code == .invalidDatabase)
            #expect("\(error.map { "\($0)" } ?? "")".contains(fixture.database))
            #expect(try await queue.read { db in try db.tableExists("notes") && !db.tableExists("events") })
        }
    }

    @Test func aConnectionWithForeignKeysOffIsRefused() async throws {
        try await withImportFixture { fixture in
            var configuration = Configuration()
            configuration.foreignKeysEnabled = false
            let queue = try Self.emptyQueue(at: fixture.database, configuration)
            let error = await #expect(throws: ImportError.self) {
                try await SeedImporter(configuration: fixture.importer().configuration, database: queue).run()
            }
            #expect(error?.code == .invalidDatabase)
            #expect("\(error.map { "\($0)" } ?? "")".contains("foreign keys off"))
            #expect(try await queue.read { db in try !db.tableExists("events") }, "nothing installed")
        }
    }

    /// A WAL database keeps its page size: the seed's pages cannot be copied into one of another size.
    @Test func aDatabaseWithAnotherPageSizeIsRefusedUntouched() async throws {
        try await withImportFixture { fixture in
            try FileManager.default.createDirectory(
                atPath: (fixture.database as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            let creating = try DatabaseQueue(path: fixture.database)
            try await creating.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA page_size = 8192; PRAGMA journal_mode = WAL")
            }
            try creating.close()
            let pool = try DatabasePool(path: fixture.database)
            let error = await #expect(throws: ImportError.self) {
                try await SeedImporter(configuration: fixture.importer().configuration, database: pool).run()
            }
            #expect(error?.code == .invalidDatabase)
            #expect("\(error.map { "\($0)" } ?? "")".contains("pages of 8192 bytes"), "\(String(describing: error))")
            #expect(try await pool.read { db in try Int.fetchOne(db, sql: "PRAGMA page_size") } == 8192)
            #expect(try await pool.read { db in try !db.tableExists("events") }, "nothing installed")
        }
    }

    @Test func anInMemoryDatabaseIsRefused() async throws {
        try await withImportFixture { fixture in
            let error = await #expect(throws: ImportError.self) {
                try await SeedImporter(configuration: fixture.importer().configuration, database: DatabaseQueue())
                    .run()
            }
            #expect(error?.code == .invalidDatabase)
            #expect(!FileManager.default.fileExists(atPath: ":memory:.lock"), "no lock file in the working folder")
        }
    }

    // MARK: - Support

    static func emptyPool(at path: String) throws -> DatabasePool {
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        return try DatabasePool(path: path)
    }

    static func emptyQueue(at path: String, _ configuration: Configuration = Configuration()) throws -> DatabaseQueue {
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        return try DatabaseQueue(path: path, configuration: configuration)
    }

    /// Every value a `ValueObservation` of the `events` rows (in key order) yields in `writer`,
    /// until the task is cancelled.
    static func observeEvents(in writer: some DatabaseWriter) -> (Locked<[[[DatabaseValue]]]>, Task<Void, Never>) {
        let seen = Locked<[[[DatabaseValue]]]>([])
        let task = Task {
            do {
                for try await value in ValueObservation.tracking(events).values(in: writer) {
                    seen.update { $0.append(value) }
                }
            } catch {
                Issue.record(error, "the app's observation failed")
            }
        }
        return (seen, task)
    }

    /// The `events` rows in key order.
    static func events(_ db: Database) throws -> [[DatabaseValue]] {
        try Row.fetchAll(db, sql: "SELECT * FROM events ORDER BY 1").map { Array($0.databaseValues) }
    }
}
