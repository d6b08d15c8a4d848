import Foundation
import GRDB
import SeedSyncImport
import SeedSyncModel
import SeedSyncSeed
import SeedSyncTesting
import Testing

/// A seed proves it is intact before it is installed or replaces a database: damage that SQLite's
/// own checks cannot see (a changed character inside a value) and damage that only they can see
/// (a broken index) are both refused, with and without the manifest.
@Suite struct SeedIntegrityTests {
    /// With a manifest, its SHA-256 catches a changed character; without one, the content digest does.
    @Test(arguments: [true, false])
    func aChangedCharacterInAValueIsNeverInstalled(withManifest: Bool) async throws {
        try await withImportFixture { fixture in
            try SeedDamage.changeCharacter(in: try SeedDamage.someTitle(in: fixture.seed), of: fixture.seed)
            if !withManifest { try FileManager.default.removeItem(atPath: SeedManifest.path(forSeed: fixture.seed)) }
            #expect(try SeedFile(path: fixture.seed).quickCheck() == nil, "the damage is invisible to SQLite")

            await #expect { try await fixture.importer().run() } throws: { error in
                let error = error as? ImportError
                return error?.code == .invalidSeed
                    && error!.description.contains(withManifest ? "does not match its manifest" : "content")
            }
            #expect(!FileManager.default.fileExists(atPath: fixture.database))
            #expect(!FileManager.default.fileExists(atPath: fixture.database + ".installing"))
        }
    }

    /// A manifest that describes the file's bytes (size and SHA-256 right) but lies about what is
    /// in it, its row counts or its revision: refused, naming what differs, nothing installed.
    @Test(arguments: ["rowCounts", "revision"])
    func aManifestThatLiesAboutTheSeedIsRefused(field: String) async throws {
        try await withImportFixture { fixture in
            let path = SeedManifest.path(forSeed: fixture.seed)
            var manifest = try SeedManifest.read(from: path)
            if field == "rowCounts" { manifest.rowCounts["events"]! += 1 } else { manifest.revision += 1 }
            try manifest.jsonData().write(to: URL(fileURLWithPath: path))
            await #expect { try await fixture.importer().run() } throws: { error in
                let error = error as? ImportError
                let named = field == "rowCounts" ? "row counts" : "revision"
                return error?.code == .invalidSeed && error!.description.contains("does not match its manifest")
                    && error!.description.contains(named)
            }
            #expect(!FileManager.default.fileExists(atPath: fixture.database))
            #expect(!FileManager.default.fileExists(atPath: fixture.database + ".installing"))
        }
    }

    /// A corrupt `.gz` is a damaged seed, not a storage failure: the inflater's error must not be
    /// taken for a read error of the file.
    @Test func aCorruptGzipSeedIsADamagedSeed() async throws {
        try await withImportFixture(gzip: true) { fixture in
            let compressed = fixture.seed + ".gz"
            var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: compressed)))
            for offset in stride(from: bytes.count / 3, to: bytes.count / 3 + 64, by: 1) { bytes[offset] ^= 0x5A }
            try Data(bytes).write(to: URL(fileURLWithPath: compressed))
            await #expect { try await fixture.importer(seed: compressed).run() } throws: { error in
                let error = error as? ImportError
                return error?.code == .invalidSeed && error!.description.contains("gzip")
            }
            #expect(!FileManager.default.fileExists(atPath: fixture.database))
        }
    }

    /// A broken index passes the manifest (rewritten to match) and the content digest (values are
    /// read through the tables): `quick_check` of the copy is what refuses it.
    @Test func aBrokenIndexIsCaughtByTheQuickCheckOfTheCopy() async throws {
        try await withImportFixture { fixture in
            try SeedDamage.breakIndex("events_location_id_index", of: fixture.seed)
            try SeedDamage.matchManifest(to: fixture.seed)
            await #expect { try await fixture.importer().run() } throws: { error in
                let error = error as? ImportError
                return error?.code == .invalidSeed && error!.description.contains("quick_check")
            }
            #expect(!FileManager.default.fileExists(atPath: fixture.database))
        }
    }

    @Test func aSeedWithNeitherManifestNorDigestIsNotInstalled() async throws {
        try await withImportFixture { fixture in
            try FileManager.default.removeItem(atPath: SeedManifest.path(forSeed: fixture.seed))
            let queue = try DatabaseQueue(path: fixture.seed)
            try await queue.write { db in try db.execute(sql: "DELETE FROM _seedsync_seed WHERE key = 'content_sha256'")
            }
            try queue.close()
            await #expect { try await fixture.importer().run() } throws: { error in
                let error = error as? ImportError
                return error?.code == .invalidSeed && error!.description.contains("nothing proves it intact")
            }
        }
    }

    /// An intact seed without its manifest installs: the digest proves it.
    @Test func anIntactSeedWithoutAManifestInstalls() async throws {
        try await withImportFixture { fixture in
            try FileManager.default.removeItem(atPath: SeedManifest.path(forSeed: fixture.seed))
            let report = try await fixture.importer().run()
            #expect(report.installed)
            #expect(try contents(ofSeed: fixture.database) == (try await fixture.serverContents()))
            #expect(
                try SeedFile(path: fixture.database).metadata().contentSHA256 == nil,
                "the first change set removes the seed's digest")
        }
    }

    /// A damaged newer seed is reported and the database it would have replaced keeps syncing.
    @Test(arguments: [true, false])
    func aDamagedNewerSeedIsReportedAndTheDatabaseKeepsSyncing(withManifest: Bool) async throws {
        try await withImportFixture { fixture in
            let (installed, newer, _) = try await fixture.installThenBuildNewerSeed(after: 10)
            try SeedDamage.changeCharacter(in: try SeedDamage.someTitle(in: newer), of: newer)
            if !withManifest { try FileManager.default.removeItem(atPath: SeedManifest.path(forSeed: newer)) }
            try await fixture.mutate(5, seed: 31)

            var events: [ImportEvent] = []
            for try await event in fixture.importer(seed: newer).events() { events.append(event) }

            guard case .finished(let report) = events.last else {
                Issue.record("no report")
                return
            }
            #expect(report.replacements.isEmpty)
            #expect(report.seedProblem?.contains(newer) == true)
            #expect(events.contains { if case .seedRejected = $0 { true } else { false } })
            #expect(report.fromRevision == installed)
            #expect(try contents(ofSeed: fixture.database) == (try await fixture.serverContents()))
            #expect(!FileManager.default.fileExists(atPath: fixture.database + ".installing"))
        }
    }

    /// A newer seed that is not a database at all does not stop the sync either.
    @Test func anUnreadableNewerSeedIsReportedAndTheDatabaseKeepsSyncing() async throws {
        try await withImportFixture { fixture in
            try await fixture.importer().run()
            try await fixture.mutate(5, seed: 31)
            let garbage = fixture.served.path("garbage.sqlite")
            try Data(repeating: 0x5A, count: 8192).write(to: URL(fileURLWithPath: garbage))
            let report = try await fixture.importer(seed: garbage).run()
            #expect(report.seedProblem != nil)
            #expect(try contents(ofSeed: fixture.database) == (try await fixture.serverContents()))
        }
    }
}
