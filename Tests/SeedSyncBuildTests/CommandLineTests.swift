import Foundation
import SeedSyncBuild
import SeedSyncSeed
import SeedSyncTesting
import Testing

/// The built `seed-server`, `seed-build` and `seed-verify` executables, run as a user would.
@Suite struct CommandLineTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Under a file-size limit the build fails with one line naming the work file and the limit,
    /// and removes the work file: a kept one would fail the same way on `--resume`.
    @Test func aFileSizeLimitFailsTheBuildCleanly() async throws {
        try await withServedStore(events: 3000) { served in
            let seed = served.path("out/demo.sqlite")
            let built = try await Executables.run(
                "seed-build", ["--server", served.url.absoluteString, "--out", seed],
                environment: ["SEED_TOKEN": liveServerToken], fileSizeLimitKiB: 128)
            #expect(built.status != 0)
            #expect(built.stderr.split(separator: "\n").count == 1, "\(built.stderr)")
            #expect(
                built.stderr.contains(seed + ".partial") && built.stderr.contains("file-size limit"), "\(built.stderr)")
            #expect(built.stderr.contains("will be about"), "\(built.stderr)")
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: served.path("out"))
            #expect(leftovers.isEmpty, "\(leftovers)")
        }
    }

    @Test func buildAndVerifyEndToEnd() async throws {
        try await withTemporaryDirectory { directory in
            let database = directory.appendingPathComponent("server.sqlite").path
            _ = try await Executables.run(
                "seed-server", ["init", "--database", database, "--demo", "--events", "500", "--locations", "30"])
            _ = try await Executables.run("seed-server", ["mutate", "--database", database, "--changes", "20"])
            let server = try Executables.start(
                "seed-server", ["serve", "--database", database, "--port", "0"],
                environment: ["SEED_SERVER_TOKENS": "cli-token"])
            defer { if server.isRunning { server.terminate() } }
            let url = try #require(await Executables.listeningAddress(of: server))
            let seed = directory.appendingPathComponent("out/demo.sqlite").path

            let built = try await Executables.run(
                "seed-build", ["--server", url, "--out", seed, "--gzip", "--json"],
                environment: ["SEED_TOKEN": "cli-token"])
            #expect(built.status == 0, "\(built.stderr)")
            let report = try JSONDecoder().decode(BuildReport.self, from: Data(built.stdout.utf8))
            #expect(report.manifest.revision == 21)
            #expect(report.manifest.rowCounts.values.reduce(0, +) > 500)
            #expect(built.stderr.isEmpty, "progress goes to a terminal only")

            let verified = try await Executables.run(
                "seed-verify", [seed + ".gz", "--json", "--expect-revision", "21"])
            #expect(verified.status == 0, "\(verified.stdout)")
            let verification = try JSONDecoder().decode(VerificationReport.self, from: Data(verified.stdout.utf8))
            #expect(verification.passed)
            #expect(verification.checks.count == 14)

            let denied = try await Executables.run(
                "seed-build", ["--server", url, "--out", directory.appendingPathComponent("denied.sqlite").path],
                environment: ["SEED_TOKEN": "wrong"])
            #expect(denied.status != 0)
            #expect(denied.stderr.contains("401"))
            #expect(denied.stderr.split(separator: "\n").count == 1, "\(denied.stderr)")
            #expect(!denied.stderr.contains("wrong"), "the token is never printed")
            #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("denied.sqlite").path))

            try Data("{}".utf8).write(to: URL(fileURLWithPath: seed + ".manifest.json"))
            let broken = try await Executables.run("seed-verify", [seed])
            #expect(broken.status == 1)
            #expect(broken.stdout.contains("FAILED  manifest"))
            #expect(broken.stderr.contains("failed manifest"))

            // --gzip-level implies --gzip, and the manifest says the level.
            let fastest = directory.appendingPathComponent("fastest.sqlite").path
            let level1 = try await Executables.run(
                "seed-build", ["--server", url, "--out", fastest, "--gzip-level", "1", "--quiet"],
                environment: ["SEED_TOKEN": "cli-token"])
            #expect(level1.status == 0, "\(level1.stderr)")
            let written = try SeedManifest.read(from: SeedManifest.path(forSeed: fastest))
            #expect(written.gzip?.level == 1)
            for bad in ["0", "10"] {
                let refused = try await Executables.run(
                    "seed-build", ["--server", url, "--out", fastest, "--gzip-level", bad])
                #expect(
                    refused.status == 64 && refused.stderr.contains("--gzip-level must be 1 to 9"), "\(refused.stderr)")
            }

            #expect(try await Executables.run("seed-build", ["--server", "ftp://x", "--out", seed]).status == 64)
            #expect(try await Executables.run("seed-verify", []).status == 64)
        }
    }

    /// `seed-build keygen`, a build signed by a key file and by `SEED_SIGNING_KEY`, `seed-verify
    /// --trust` and `seed-import --trust`, as a user runs them; the private key is never printed.
    @Test func signedSeedsEndToEnd() async throws {
        try await withServedStore(events: 300) { served in
            let keyPath = served.path("keys/seeds.pem")
            try FileManager.default.createDirectory(atPath: served.path("keys"), withIntermediateDirectories: true)
            let made = try await Executables.run("seed-build", ["keygen", "--out", keyPath])
            #expect(made.status == 0, "\(made.stderr)")
            let key = try SeedSigningKey.read(from: keyPath)
            #expect(made.stdout.contains(key.publicKey.base64) && made.stdout.contains(key.publicKey.id))
            #expect(try await Executables.run("seed-build", ["keygen", "--out", keyPath]).status == 1)

            let seed = served.path("out/demo.sqlite")
            let environment = ["SEED_TOKEN": liveServerToken]
            let built = try await Executables.run(
                "seed-build",
                ["--server", served.url.absoluteString, "--out", seed, "--gzip", "--signing-key", keyPath],
                environment: environment)
            #expect(built.status == 0, "\(built.stderr)")
            let publicKey = SeedSigningKey.publicKeyPath(for: keyPath)
            let verified = try await Executables.run("seed-verify", [seed + ".gz", "--trust", publicKey])
            #expect(verified.status == 0 && verified.stdout.contains("PASSED  signature"), "\(verified.stdout)")
            let other = SeedSigningKey()
            let refused = try await Executables.run("seed-verify", [seed, "--trust", other.publicKey.base64])
            #expect(refused.status == 1 && refused.stderr.contains("failed signature"), "\(refused.stderr)")
            let badKey = try await Executables.run("seed-verify", [seed, "--trust", "no-such-key"])
            #expect(badKey.status != 0 && badKey.stderr.contains("no-such-key"), "\(badKey.stderr)")

            // The key from the environment; a broken one is named by its variable, never printed.
            let fromEnvironment = served.path("env/demo.sqlite")
            let signed = try await Executables.run(
                "seed-build", ["--server", served.url.absoluteString, "--out", fromEnvironment],
                environment: environment.merging(["SEED_SIGNING_KEY": other.pemRepresentation]) { $1 })
            #expect(signed.status == 0, "\(signed.stderr)")
            let manifest = try SeedManifest.read(from: SeedManifest.path(forSeed: fromEnvironment))
            #expect(manifest.signatures?.map(\.key) == [other.publicKey.id])
            let secret = String(key.pemRepresentation.dropLast(30))
            let broken = try await Executables.run(
                "seed-build", ["--server", served.url.absoluteString, "--out", served.path("broken/demo.sqlite")],
                environment: environment.merging(["SEED_SIGNING_KEY": secret]) { $1 })
            #expect(broken.status == 1 && broken.stderr.contains("SEED_SIGNING_KEY"), "\(broken.stderr)")
            let body = secret.split(separator: "\n")[1]
            #expect(!broken.stderr.contains(body) && !broken.stdout.contains(body))

            // seed-import installs the seed signed by the trusted key, and refuses the other.
            let database = served.path("app/events.sqlite")
            let arguments = ["--server", served.url.absoluteString, "--database", database, "--trust", publicKey]
            let untrusted = try await Executables.run(
                "seed-import", ["--seed", fromEnvironment] + arguments, environment: environment)
            #expect(untrusted.status == 1 && untrusted.stderr.contains("unknown key"), "\(untrusted.stderr)")
            #expect(!FileManager.default.fileExists(atPath: database))
            let installed = try await Executables.run(
                "seed-import", ["--seed", seed + ".gz"] + arguments, environment: environment)
            #expect(installed.status == 0, "\(installed.stderr)")
        }
    }

    /// The reproducibility guard: the committed demo seed rebuilds to the SHA-256 in its manifest.
    @Test func theCommittedDemoSeedRebuildsToTheSameBytes() async throws {
        try await withTemporaryDirectory { directory in
            let script = Self.repository.appendingPathComponent("scripts/tools/build-seed.sh").path
            let built = try await Executables.run(
                "/bin/bash", [script, "--out", directory.path, "--bin", Executables.productsDirectory.path])
            #expect(built.status == 0, "\(built.stderr)")

            let committed = try SeedManifest.read(
                from: Self.repository.appendingPathComponent("Snapshots/demo.sqlite.manifest.json").path)
            let rebuilt = try SeedManifest.read(
                from: directory.appendingPathComponent("demo.sqlite.manifest.json").path)
            #expect(rebuilt.sha256 == committed.sha256)
            #expect(
                try FileDigest(ofFile: directory.appendingPathComponent("demo.sqlite").path).sha256 == committed.sha256)
            let shipped = try await SeedVerifier.verify(
                Self.repository.appendingPathComponent("Snapshots/demo.sqlite").path)
            #expect(shipped.passed, "\(shipped.failures)")
        }
    }
}
