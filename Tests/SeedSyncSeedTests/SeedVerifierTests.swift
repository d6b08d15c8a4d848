import Foundation
import GRDB
import SeedSyncBuild
import SeedSyncSeed
import SeedSyncTesting
import Testing

/// `SeedVerifier` on a good seed, and on each kind of damage it must catch.
@Suite struct SeedVerifierTests {
    /// Builds a demo seed (with its `.gz` copy) and hands its path to `body`.
    func withSeed(_ body: @escaping @Sendable (String, ServedStore) async throws -> Void) async throws {
        try await withServedStore(events: 400, changes: 10) { served in
            let report = try await served.builder("seed/demo.sqlite", gzip: true).build()
            try await body(report.output, served)
        }
    }

    func failures(_ path: String, _ options: SeedVerifier.Options = .init()) async throws -> [String] {
        try await SeedVerifier.verify(path, options: options).failures.map(\.name)
    }

    @Test func aGoodSeedPassesEveryCheck() async throws {
        try await withSeed { seed, _ in
            let report = try await SeedVerifier.verify(
                seed, options: .init(expectedRevision: 11, expectedSchemaVersion: 1))
            #expect(report.passed, "\(report.failures)")
            #expect(
                Set(report.checks.map(\.name)) == [
                    "sqlite-file", "journal-mode", "seed-format", "integrity", "foreign-keys", "free-pages",
                    "revisions", "schema", "content", "expected-revision", "expected-schema-version", "manifest",
                    "signature",
                ])
            #expect(
                try await failures(seed, .init(expectedRevision: 12, expectedSchemaVersion: 2)) == [
                    "expected-revision", "expected-schema-version",
                ])
            let compressed = try await SeedVerifier.verify(seed + ".gz")
            #expect(compressed.passed, "\(compressed.failures)")
            #expect(compressed.checks.prefix(2).map(\.name) == ["gzip-hash", "gzip"])
        }
    }

    @Test func aFlippedByteInADataPageFailsTheHash() async throws {
        try await withSeed { seed, _ in
            try patch(seed) { bytes in bytes[bytes.count - 2000] ^= 0x01 }
            #expect(try await failures(seed).contains("manifest"))
        }
    }

    /// A changed character inside a value: SQLite's checks pass, the manifest's hash and the
    /// content digest do not; without the manifest, the digest alone catches it.
    @Test func aChangedCharacterInAValueFailsTheContentDigest() async throws {
        try await withSeed { seed, _ in
            try SeedDamage.changeCharacter(in: try SeedDamage.someTitle(in: seed), of: seed)
            #expect(try await failures(seed) == ["content", "manifest"])
            try FileManager.default.removeItem(atPath: SeedManifest.path(forSeed: seed))
            let report = try await SeedVerifier.verify(seed)
            #expect(report.failures.map(\.name) == ["content"])
            #expect(report.checks.first { $0.name == "manifest" }?.status == .skipped)
        }
    }

    /// Without a digest, a seed passes the content check only on its manifest.
    @Test func aSeedWithoutDigestNeedsItsManifest() async throws {
        try await withSeed { seed, _ in
            try rewrite(seed, "DELETE FROM _seedsync_seed WHERE key = 'content_sha256'")
            try SeedDamage.matchManifest(to: seed)
            let report = try await SeedVerifier.verify(seed)
            #expect(report.passed, "\(report.failures)")
            #expect(report.checks.first { $0.name == "content" }?.status == .skipped)
            try FileManager.default.removeItem(atPath: SeedManifest.path(forSeed: seed))
            #expect(try await failures(seed) == ["content"])
        }
    }

    /// Each check of SEED-FORMAT.md §5 on the one damage only it can see (besides the manifest and
    /// the content digest, which any change to the rows or the file trips as well).
    @Test func aDanglingReferenceFailsTheForeignKeyCheck() async throws {
        try await withSeed { seed, _ in
            try rewrite(
                seed,
                "PRAGMA foreign_keys = OFF; UPDATE events SET location_id = 999999 WHERE id = (SELECT min(id) FROM events WHERE location_id IS NOT NULL)"
            )
            #expect(try await failures(seed) == ["foreign-keys", "content", "manifest"])
        }
    }

    @Test func freePagesFailTheVacuumCheck() async throws {
        try await withSeed { seed, _ in
            try rewrite(
                seed,
                "DELETE FROM _seedsync_seed WHERE key = 'nothing'; CREATE TABLE scratch (x); INSERT INTO scratch SELECT zeroblob(100000); DROP TABLE scratch",
                vacuum: false)
            #expect(try await failures(seed) == ["free-pages", "manifest"])
        }
    }

    @Test(arguments: [
        "CREATE INDEX extra ON events (title)", "PRAGMA user_version = 7",
        "UPDATE _seedsync_seed SET value = '00' WHERE key = 'schema_hash'",
    ])
    func anObjectOrVersionTheSchemaDoesNotDescribeFailsTheSchemaCheck(_ change: String) async throws {
        try await withSeed { seed, _ in
            try rewrite(seed, change)
            let failed = try await failures(seed)
            #expect(failed.contains("schema"), "\(failed)")
            #expect(!failed.contains("integrity") && !failed.contains("foreign-keys"))
        }
    }

    @Test func aBrokenIndexFailsTheIntegrityCheck() async throws {
        try await withSeed { seed, _ in
            try SeedDamage.breakIndex("events_location_id_index", of: seed)
            let report = try await SeedVerifier.verify(seed)
            // The content digest counts rows through the smallest b-tree, this index, so it fails too.
            #expect(report.failures.map(\.name) == ["integrity", "content", "manifest"], "\(report.failures)")
        }
    }

    @Test func aSeedInWALModeFailsTheJournalCheck() async throws {
        try await withSeed { seed, _ in
            try rewrite(seed, "PRAGMA journal_mode = WAL", vacuum: false)
            #expect(try await failures(seed) == ["journal-mode", "manifest"])
        }
    }

    @Test func aTruncatedFileFails() async throws {
        try await withSeed { seed, _ in
            try patch(seed) { bytes in bytes.removeLast(4096) }
            #expect(try await failures(seed).contains("sqlite-file"))
        }
    }

    @Test func junkAppendedFails() async throws {
        try await withSeed { seed, _ in
            try patch(seed) { bytes in bytes += Array("junk".utf8) }
            #expect(try await failures(seed).contains("sqlite-file"))
        }
    }

    @Test func aWrongApplicationIDFails() async throws {
        try await withSeed { seed, _ in
            try patch(seed) { bytes in bytes[71] ^= 0xFF }  // header bytes 68…71: application id
            #expect(try await failures(seed).contains("seed-format"))
        }
    }

    @Test func missingMetadataFails() async throws {
        try await withSeed { seed, _ in
            try rewrite(seed, "DELETE FROM _seedsync_seed WHERE key = 'schema_hash'")
            let failed = try await failures(seed)
            #expect(failed.contains("seed-format"))
            #expect(!failed.contains("integrity"))
        }
    }

    @Test func aLeftoverWALFails() async throws {
        try await withSeed { seed, _ in
            try Data(count: 32).write(to: URL(fileURLWithPath: seed + "-wal"))
            #expect(try await failures(seed) == ["journal-mode"])
        }
    }

    @Test func aManifestHashMismatchFails() async throws {
        try await withSeed { seed, _ in
            try editManifest(of: seed) { $0.sha256 = String(repeating: "0", count: 64) }
            #expect(try await failures(seed) == ["manifest"])
        }
    }

    @Test func aRowCountMismatchFails() async throws {
        try await withSeed { seed, _ in
            try editManifest(of: seed) { $0.rowCounts["events"]! += 1 }
            let report = try await SeedVerifier.verify(seed)
            #expect(report.failures.map(\.name) == ["manifest"])
            #expect(report.failures.first?.detail.contains("row counts") == true)
        }
    }

    @Test func aRowAfterTheEmbeddedRevisionFails() async throws {
        try await withSeed { seed, _ in
            try rewrite(seed, "UPDATE events SET revision = revision + 1000 WHERE id = 7")
            #expect(try await failures(seed).contains("revisions"))
        }
    }

    @Test func aGzipThatDoesNotMatchFails() async throws {
        try await withSeed { seed, _ in
            try patch(seed + ".gz") { bytes in bytes[bytes.count / 2] ^= 0x10 }
            let failed = try await failures(seed + ".gz")
            #expect(failed.contains("gzip-hash"))
            #expect(failed.contains("gzip") || failed.contains("manifest"))

            try patch(seed + ".gz") { bytes in bytes.removeLast(bytes.count / 2) }
            #expect(try await failures(seed + ".gz").contains("gzip"))
        }
    }

    @Test func aGzipThatInflatesPastTheManifestStops() async throws {
        try await withSeed { seed, served in
            let zeros = served.path("zeros")
            try Data(count: 8 << 20).write(to: URL(fileURLWithPath: zeros))
            try Gzip.compress(zeros, to: seed + ".gz")
            let report = try await SeedVerifier.verify(seed + ".gz")
            let gzip = report.checks.first { $0.name == "gzip" }
            #expect(gzip?.status == .failed)
            #expect(gzip?.detail.contains("more than the manifest's") == true)
        }
    }

    @Test func filesThatAreNotSeedsFail() async throws {
        try await withTemporaryDirectory { directory in
            let text = directory.appendingPathComponent("notes.sqlite").path
            try "hello".write(toFile: text, atomically: true, encoding: .utf8)
            #expect(try await failures(text) == ["sqlite-file"])

            let plain = directory.appendingPathComponent("plain.sqlite").path
            try await DatabaseQueue(path: plain).write { try $0.execute(sql: "CREATE TABLE t (x)") }
            #expect(try await failures(plain).contains("seed-format"))
            await #expect(throws: SeedError.self) {
                try await SeedVerifier.verify(directory.appendingPathComponent("none").path)
            }
        }
    }

    // MARK: - Damage

    private func patch(_ path: String, _ change: (inout [UInt8]) -> Void) throws {
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        change(&bytes)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    /// Changes the seed with SQL, keeping it otherwise well-formed (rollback journal, vacuumed
    /// unless `vacuum` is off).
    private func rewrite(_ path: String, _ sql: String, vacuum: Bool = true) throws {
        let queue = try DatabaseQueue(path: path)
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: sql)
            if vacuum { try db.execute(sql: "VACUUM") }
        }
        try queue.close()
    }

    private func editManifest(of seed: String, _ change: (inout SeedManifest) -> Void) throws {
        let path = SeedManifest.path(forSeed: seed)
        var manifest = try SeedManifest.read(from: path)
        change(&manifest)
        try manifest.jsonData().write(to: URL(fileURLWithPath: path))
    }
}
