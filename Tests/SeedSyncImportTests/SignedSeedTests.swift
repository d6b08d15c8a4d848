import Foundation
import SeedSyncImport
import SeedSyncModel
import SeedSyncSeed
import SeedSyncTesting
import Testing

/// An importer with trusted keys installs a seed signed by one of them, and nothing else.
@Suite struct SignedSeedTests {
    static let key = SeedSigningKey()

    /// Signs the manifest beside `seed` with `keys` (none: unsigned), as `seed-build --signing-key` does.
    func sign(_ seed: String, with keys: [SeedSigningKey]) throws {
        let path = SeedManifest.path(forSeed: seed)
        try SeedManifest.read(from: path).signed(with: keys).jsonData().write(to: URL(fileURLWithPath: path))
    }

    func importer(_ fixture: ImportFixture, seed: String? = nil, trusting keys: [SeedPublicKey]) -> SeedImporter {
        var configuration = fixture.importer(seed: seed).configuration
        configuration.trustedKeys = TrustedKeys(keys)
        return SeedImporter(configuration: configuration)
    }

    @Test(arguments: [false, true]) func aSeedSignedByATrustedKeyInstallsAndCatchesUp(gzip: Bool) async throws {
        try await withImportFixture(changesAfter: 10, gzip: gzip) { fixture in
            let seed = gzip ? fixture.seed + ".gz" : fixture.seed
            try sign(fixture.seed, with: [Self.key])
            let report = try await importer(
                fixture, seed: seed, trusting: [SeedPublicKey.resolve(Self.key.publicKey.base64)]
            ).run()
            #expect(report.installed && report.seedProblem == nil)
            #expect(try revision(of: fixture.database) == (try await fixture.serverRevision()))
        }
    }

    /// Unsigned, signed by another key, or changed after signing: nothing is installed, and the
    /// message says which.
    @Test func anUntrustedSeedIsNotInstalled() async throws {
        try await withImportFixture(changesAfter: 2) { fixture in
            let trusted = [Self.key.publicKey]
            let manifestPath = SeedManifest.path(forSeed: fixture.seed)
            var cases: [(String, () throws -> Void)] = [
                ("is not signed", { try self.sign(fixture.seed, with: []) }),
                ("unknown key", { try self.sign(fixture.seed, with: [SeedSigningKey()]) }),
                (
                    "wrong signature",
                    {
                        try self.sign(fixture.seed, with: [Self.key])
                        var manifest = try SeedManifest.read(from: manifestPath)
                        manifest.rowCounts["events"]! += 1
                        try manifest.jsonData().write(to: URL(fileURLWithPath: manifestPath))
                    }
                ),
            ]
            cases.append(("is not signed", { try FileManager.default.removeItem(atPath: manifestPath) }))
            for (message, prepare) in cases {
                try prepare()
                let error = await #expect(throws: ImportError.self) {
                    try await importer(fixture, trusting: trusted).run()
                }
                #expect(error?.code == .untrustedSeed && error?.description.contains(message) == true, "\(error!)")
                #expect(!FileManager.default.fileExists(atPath: fixture.database))
            }
        }
    }

    /// A newer seed that is not signed is set aside: the installed database goes on and catches up.
    @Test func aNewerUnsignedSeedIsSetAsideAndTheDatabaseGoesOn() async throws {
        try await withImportFixture(changesAfter: 5) { fixture in
            try sign(fixture.seed, with: [Self.key])
            try await importer(fixture, trusting: [Self.key.publicKey]).run()
            try await fixture.mutate(5, seed: 3)
            let newer = try await fixture.buildSeed("newer.sqlite")
            let report = try await importer(fixture, seed: newer, trusting: [Self.key.publicKey]).run()
            #expect(report.replacements.isEmpty)
            #expect(report.seedProblem?.contains("is not signed") == true, "\(report.seedProblem ?? "")")
            #expect(try revision(of: fixture.database) == (try await fixture.serverRevision()))
            try sign(newer, with: [Self.key])
            let replaced = try await importer(fixture, seed: newer, trusting: [Self.key.publicKey]).run()
            #expect(replaced.seedProblem == nil)
        }
    }
}
