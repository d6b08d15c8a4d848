import Foundation
import GRDB
import SeedSyncClient
import SeedSyncDemo
import SeedSyncImport
import SeedSyncModel
import SeedSyncSeed
import SeedSyncTesting
import Testing

/// First run (install), catch-up, and what a second run does.
@Suite struct ImporterTests {
    @Test(arguments: [false, true])
    func installsTheSeedThenCatchesUpWithTheServer(gzip: Bool) async throws {
        try await withImportFixture(gzip: gzip) { fixture in
            let seed = gzip ? fixture.seed + ".gz" : fixture.seed
            let report = try await fixture.importer(seed: seed).run()
            let folder = URL(fileURLWithPath: fixture.database).deletingLastPathComponent().path
            #expect(files(in: folder) == ["events.sqlite", "events.sqlite.lock"])
            let serverRevision = try await fixture.serverRevision()
            #expect(report.installed)
            #expect(report.fromRevision == fixture.seedRevision)
            #expect(report.toRevision == serverRevision)
            #expect(report.changeSets == Int(serverRevision - fixture.seedRevision))
            #expect(report.inserted + report.updated + report.deleted > 0)
            #expect(try contents(ofSeed: fixture.database) == (try await fixture.serverContents()))
            #expect(try revision(of: fixture.database) == serverRevision)
        }
    }

    /// The catch-up reads the log in blocks and its head: what a cache in front of the server
    /// answers. The origin's `POST /v1/sync` is for pushes (and live sync).
    @Test func theCatchUpReadsTheLogInBlocksUpToTheHead() async throws {
        try await withImportFixture(changesBlockSize: 10) { fixture in
            #expect(fixture.seedRevision == 21)
            #expect(try await fixture.serverRevision() == 81)
            let url = fixture.served.url
            let before = try await answeredRequests("/v1/changes", on: url)
            let transactions = Locked(0)
            try await fixture.importer().run { event in
                if case .progress = event { transactions.update { $0 += 1 } }
            }
            // 22-30, 31-40, ..., 71-80 final; 81 the head, which ends the catch-up.
            #expect(try await answeredRequests("/v1/changes", on: url) - before == 7)
            // 60 change sets of a few rows each: the seven answers are applied in one transaction.
            #expect(transactions.value == 1)
            #expect(try await answeredRequests("/v1/sync", on: url) == 0)
            #expect(try contents(ofSeed: fixture.database) == (try await fixture.serverContents()))
            #expect(try revision(of: fixture.database) == 81)
        }
    }

    /// Seed at R0 plus sync to R1 equals a fresh full build at R1, for random mutation histories.
    @Test(arguments: 0..<4)
    func seedPlusSyncEqualsAFreshBuild(round: Int) async throws {
        var random = SplitMix64(seed: UInt64(round) &+ 100)
        let changes = Int(random.next() % 150) + 1
        try await withImportFixture(
            events: 200 + Int(random.next() % 200), changesAfter: changes, mutationSeed: random.next(),
            changesBlockSize: Int64(random.next() % 40) + 1
        ) { fixture in
            // Transactions of a few rows, so change sets are grouped and split in every way.
            try await fixture.importer(maxRowsPerTransaction: 1 + round * 7, syncLimit: 1 + round * 13).run()
            let fresh = try await fixture.buildSeed("fresh.sqlite")
            #expect(try revision(of: fixture.database) == (try revision(of: fresh)))
            #expect(try contents(ofSeed: fixture.database) == (try contents(ofSeed: fresh)))
        }
    }

    @Test func aSecondRunAppliesNothingAndChangesNothing() async throws {
        try await withImportFixture { fixture in
            try await fixture.importer().run()
            let before = try contents(ofSeed: fixture.database)
            let digest = try sha256(of: fixture.database)
            let second = try await fixture.importer().run()
            #expect(!second.installed)
            #expect(second.replacements.isEmpty)
            #expect(second.changeSets == 0)
            #expect(second.fromRevision == second.toRevision)
            #expect(try contents(ofSeed: fixture.database) == before)
            #expect(try sha256(of: fixture.database) == digest)
        }
    }

    @Test func eventsNameEveryKeyTheChangeSetsChanged() async throws {
        try await withImportFixture(changesAfter: 25) { fixture in
            var events: [ImportEvent] = []
            for try await event in fixture.importer(maxRowsPerTransaction: 3).events() { events.append(event) }
            let feed = try await fixture.served.client().sync(from: fixture.seedRevision, limit: 1000)
            let applied = events.compactMap { if case .applied(let changeSet) = $0 { changeSet } else { nil } }
            // The ways in weighed first, then the install.
            guard case .choseWayIn(let way) = events.first else {
                Issue.record("\(events)")
                return
            }
            #expect(way.taken.source.kind == .shippedSeed)
            #expect(events.dropFirst().first == .installed(revision: fixture.seedRevision))
            #expect(applied.map(\.revision) == feed.changeSets.map(\.revision))
            for (changeSet, sent) in zip(applied, feed.changeSets) {
                for changes in sent.changes {
                    let keys = changeSet.types[changes.type]
                    #expect(
                        keys
                            == AppliedChangeSet.Keys(
                                created: changes.create, updated: changes.update, deleted: changes.delete))
                }
            }
            #expect(events.contains(.caughtUp(revision: feed.maxRevision)))
            guard case .finished(let report) = events.last else {
                Issue.record("the last event is not .finished")
                return
            }
            #expect(report.changeSets == applied.count)
        }
    }

    @Test func aSeedThatDoesNotMatchItsManifestIsNotInstalled() async throws {
        try await withImportFixture { fixture in
            let handle = try #require(FileHandle(forUpdatingAtPath: fixture.seed))
            try handle.seek(toOffset: 8192)
            try handle.write(contentsOf: Data([0x42]))
            try handle.close()
            await #expect { try await fixture.importer().run() } throws: { ($0 as? ImportError)?.code == .invalidSeed }
            let folder = URL(fileURLWithPath: fixture.database).deletingLastPathComponent().path
            #expect(files(in: folder) == ["events.sqlite.lock"])
        }
    }

    @Test func aFileThatIsNotASeedDatabaseIsLeftAlone() async throws {
        try await withImportFixture { fixture in
            let folder = URL(fileURLWithPath: fixture.database).deletingLastPathComponent()
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try Data("my notes".utf8).write(to: URL(fileURLWithPath: fixture.database))
            await #expect { try await fixture.importer().run() } throws: {
                ($0 as? ImportError)?.code == .invalidDatabase
            }
            #expect(FileManager.default.contents(atPath: fixture.database) == Data("my notes".utf8))
        }
    }

    /// A kill during the switch of a fresh install to WAL leaves a hot journal, which the next run rolls back.
    @Test func aHotJournalOfAnInstalledSeedIsRolledBack() async throws {
        try await withImportFixture { fixture in
            try copyWithHotJournal(
                fixture.seed, to: fixture.database,
                changing: "UPDATE events SET title = 'torn', revision = revision + 1")
            let report = try await fixture.importer().run()
            #expect(!report.installed)
            #expect(report.fromRevision == fixture.seedRevision)
            #expect(try contents(ofSeed: fixture.database) == (try await fixture.serverContents()))
            #expect(!FileManager.default.fileExists(atPath: fixture.database + "-journal"))
        }
    }

    /// A kill during the switch of the checked copy to WAL leaves a hot journal beside the copy; the next run starts the copy over.
    @Test func aHotJournalBesideAnInterruptedInstallIsRemoved() async throws {
        try await withImportFixture { fixture in
            try copyWithHotJournal(
                fixture.seed, to: fixture.database + ".installing", changing: "UPDATE events SET title = 'torn'")
            let report = try await fixture.importer().run()
            let folder = URL(fileURLWithPath: fixture.database).deletingLastPathComponent().path
            #expect(files(in: folder) == ["events.sqlite", "events.sqlite.lock"])
            #expect(report.installed)
            #expect(try contents(ofSeed: fixture.database) == (try await fixture.serverContents()))
        }
    }

    /// A database of the app's own with a hot journal is not SeedSync's to roll back.
    @Test func aHotJournalOfAnotherDatabaseIsLeftAlone() async throws {
        try await withImportFixture { fixture in
            let other = fixture.served.path("other.sqlite")
            let queue = try DatabaseQueue(path: other)
            try await queue.write { db in
                try db.execute(sql: "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
                for id in 0..<2000 {
                    try db.execute(sql: "INSERT INTO notes VALUES (?, ?)", arguments: [id, "note \(id)"])
                }
            }
            try queue.close()
            try copyWithHotJournal(other, to: fixture.database, changing: "UPDATE notes SET body = 'torn'")
            let before = (
                FileManager.default.contents(atPath: fixture.database),
                FileManager.default.contents(atPath: fixture.database + "-journal")
            )
            await #expect { try await fixture.importer().run() } throws: {
                ($0 as? ImportError)?.code == .invalidDatabase
            }
            #expect(FileManager.default.contents(atPath: fixture.database) == before.0)
            #expect(FileManager.default.contents(atPath: fixture.database + "-journal") == before.1)
        }
    }

    @Test func aSeedOfAnotherDatasetIsNotInstalled() async throws {
        try await withImportFixture { fixture in
            try await withServedStore(schema: Fixtures.catalogSchema) { other in
                let importer = SeedImporter(
                    configuration: .init(
                        seed: fixture.seed, database: fixture.database,
                        server: .init(serverURL: other.url, token: liveServerToken, requestTimeout: 10, retry: .none)
                    ))
                await #expect { try await importer.run() } throws: { ($0 as? ImportError)?.code == .mismatch }
                #expect(!FileManager.default.fileExists(atPath: fixture.database))
            }
        }
    }

    @Test func withoutAServerTheSeedIsStillInstalled() async throws {
        try await withImportFixture { fixture in
            let importer = SeedImporter(
                configuration: .init(
                    seed: fixture.seed, database: fixture.database,
                    server: .init(
                        serverURL: URL(string: "http://127.0.0.1:1")!, token: nil, requestTimeout: 2, retry: .none)
                ))
            await #expect { try await importer.run() } throws: { ($0 as? SyncClientError)?.code == .unreachable }
            let installed = try revision(of: fixture.database)
            let (rows, seedRows) = (try contents(ofSeed: fixture.database), try contents(ofSeed: fixture.seed))
            #expect(installed == fixture.seedRevision)
            #expect(rows == seedRows)
        }
    }
}
