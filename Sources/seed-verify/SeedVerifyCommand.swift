import ArgumentParser
import Foundation
import SeedSyncModel
import SeedSyncSeed

@main
struct SeedVerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "seed-verify",
        abstract: "Check that a seed database (plain or .gz) is sound, and matches its manifest.",
        discussion: "Exits 0 only when every check passes; the failing checks are named otherwise."
    )

    @Argument(help: "The seed file: SEED or SEED.gz.") var seed: String
    @Option(help: "The manifest (default: SEED.manifest.json beside the seed, when there is one).") var manifest:
        String?
    @Option(help: "Fail unless the seed is at this revision.") var expectRevision: Int64?
    @Option(help: "Fail unless the seed has this schema version.") var expectSchemaVersion: Int?
    @Option(
        help: ArgumentHelp(
            "Fail unless the manifest is signed by this Ed25519 public key: a PEM file, or the key in base64 (repeatable: any one of them).",
            valueName: "KEY")) var trust: [String] = []
    @Flag(help: "Print the report as JSON on stdout.") var json = false

    func run() async throws {
        FileSystem.reportFileSizeLimitAsError()
        let options = SeedVerifier.Options(
            manifestPath: manifest, expectedRevision: expectRevision, expectedSchemaVersion: expectSchemaVersion,
            trustedKeys: TrustedKeys(try trust.map(SeedPublicKey.resolve)))
        let report = try await SeedVerifier.verify(seed, options: options)
        if json {
            print(String(decoding: try JSONEncoder.stable().encode(report), as: UTF8.self))
        } else {
            for check in report.checks {
                print(
                    "\(check.status.rawValue.uppercased().padding(toLength: 7, withPad: " ", startingAt: 0)) \(check.name): \(check.detail)"
                )
            }
        }
        guard report.passed else {
            FileHandle.standardError.write(
                Data("seed-verify: \(seed) failed \(report.failures.map(\.name).joined(separator: ", "))\n".utf8))
            throw ExitCode(1)
        }
    }
}
