import ArgumentParser
import Foundation
import SeedSyncBuild
import SeedSyncCLI
import SeedSyncClient
import SeedSyncModel
import SeedSyncSeed

@main
struct SeedBuildCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "seed-build",
        abstract: "Download a dataset from a SeedSync server into a seed database, with its manifest.",
        subcommands: [BuildCommand.self, KeygenCommand.self],
        defaultSubcommand: BuildCommand.self
    )
}

struct BuildCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "build",
        abstract: "Build a seed and its manifest (the default).",
        discussion: """
            The token comes from SEED_TOKEN or --token-file. The seed is built in OUT.partial and \
            renamed to OUT when complete; --resume continues an interrupted build. With \
            --signing-key (or a PEM key in SEED_SIGNING_KEY) every manifest written is signed.
            """
    )

    @OptionGroup var connection: ServerOptions
    @Option(help: "The seed file to write; the manifest goes to OUT.manifest.json.") var out: String
    @Option(help: "Comma-separated types to include (default: all).") var types: String?
    @Option(help: "Rows per snapshot page.") var pageSize = 10_000
    @Option(help: "Change sets per POST /v1/sync request (the catch-up reads the log in the server's blocks).")
    var syncLimit = 1000
    @Option(help: "Seconds a request may wait for data.") var timeout: Double = 30
    @Flag(help: "Also write OUT.gz.") var gzip = false
    @Option(
        help: ArgumentHelp(
            "The zlib level of OUT.gz, 1 (fastest) to 9 (smallest); 6 by default. Implies --gzip; the manifest records it, and a rebuild at the same level is byte for byte the same.",
            valueName: "1-9"))
    var gzipLevel: Int?
    @Option(help: "The schema version to build (default: the newest the server serves).") var schemaVersion: Int?
    @Flag(
        help:
            "Register the seed with the server so compaction keeps the history it needs (the token must be an admin token)."
    ) var register = false
    @Option(
        help: ArgumentHelp(
            "With --register: the address of the folder the files will be published in; the seed is registered with its file's address there, so fresh apps with no seed find it.",
            valueName: "URL")) var publishedAt: String?
    @Option(
        help: ArgumentHelp(
            "Also write the seed of this scope value beside OUT, as OUT's name with .NAME-VALUE (repeatable).",
            valueName: "NAME=VALUE")) var scope: [String] = []
    @Flag(
        help: "Also write a seed per scope value any row holds, cut from this one build (needs a token of every value)."
    )
    var everyScope = false
    @Option(
        help: ArgumentHelp(
            "Sign the manifests with the Ed25519 private key in this PEM file (repeatable: one signature each; see `seed-build keygen`).",
            valueName: "FILE")) var signingKey: [String] = []
    @Flag(help: "Continue OUT.partial from an interrupted build.") var resume = false
    @Flag(help: "Print a JSON summary on stdout.") var json = false
    @Flag(help: "Print nothing but errors.") var quiet = false

    func validate() throws {
        guard pageSize > 0, syncLimit > 0, timeout > 0 else {
            throw ValidationError("--page-size, --sync-limit and --timeout must be positive")
        }
        guard (schemaVersion ?? 1) >= 1 else { throw ValidationError("--schema-version must be 1 or more") }
        guard (1...9).contains(gzipLevel ?? 6) else { throw ValidationError("--gzip-level must be 1 to 9") }
        guard types.map({ !$0.split(separator: ",").isEmpty }) ?? true else {
            throw ValidationError("--types needs at least one type")
        }
        _ = try scopeSeeds
        if let publishedAt {
            guard register else { throw ValidationError("--published-at goes with --register") }
            guard SeedRegistration.isValidURL(publishedAt + "/seed") else {
                throw ValidationError("--published-at must be an http:// or https:// address")
            }
        }
    }

    /// The seeds per scope value asked for, if any.
    private var scopeSeeds: ScopeSeeds? {
        get throws {
            if everyScope {
                guard scope.isEmpty else { throw ValidationError("--every-scope and --scope exclude each other") }
                return .every
            }
            guard !scope.isEmpty else { return nil }
            let pairs = scope.map { $0.split(separator: "=", maxSplits: 1).map(String.init) }
            guard let name = pairs.first?[0], pairs.allSatisfy({ $0.count == 2 && $0[0] == name && !$0[1].isEmpty })
            else {
                throw ValidationError("--scope takes NAME=VALUE, one scope name for all (e.g. --scope team=42)")
            }
            return .only(scope: name, values: pairs.map { $0[1] })
        }
    }

    func run() async throws {
        do {
            try await build()
        } catch {
            throw CommandFailure.hinted(error) { ServerOptions.hint(for: $0) ?? Self.hint(for: $0) }
        }
    }

    private func build() async throws {
        FileSystem.reportFileSizeLimitAsError()
        let progress = ProgressPrinter(enabled: !quiet && ProgressPrinter.stderrIsTerminal)
        let client = SyncClient(
            configuration: try connection.client(requestTimeout: timeout),
            onRetry: { attempt, error, delay in progress.retry(attempt: attempt, error: error, delay: delay) }
        )
        let options = SeedBuilder.Options(
            output: out, types: types.map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } },
            pageSize: pageSize, syncLimit: syncLimit, gzip: gzip || gzipLevel != nil, gzipLevel: gzipLevel ?? 6,
            resume: resume, schemaVersion: schemaVersion,
            register: register, scopes: try scopeSeeds, signingKeys: try signingKeys(),
            publishedAt: publishedAt.flatMap(URL.init(string:))
        )
        let report = try await SeedBuilder(client: client, options: options).build { progress.handle($0) }
        progress.end()
        if json {
            print(String(decoding: try JSONEncoder.stable().encode(report), as: UTF8.self))
        } else if !quiet {
            print(Self.summary(report))
        }
    }

    /// The keys of `--signing-key`, and the one in `SEED_SIGNING_KEY` when it is set.
    private func signingKeys(environment: [String: String] = ProcessInfo.processInfo.environment) throws
        -> [SeedSigningKey]
    {
        let fromEnvironment = try environment["SEED_SIGNING_KEY"].map { text in
            do {
                return try SeedSigningKey(pem: text)
            } catch {
                throw SeedError(.invalidKey, "SEED_SIGNING_KEY is \(error)")
            }
        }
        return try signingKey.map { try SeedSigningKey.read(from: $0) } + (fromEnvironment.map { [$0] } ?? [])
    }

    /// The flag that helps with a build's `error`, when one does.
    static func hint(for error: any Error) -> String? {
        guard let error = error as? SeedError else { return nil }
        return switch error.code {
        case .alreadyExists: "remove it, or continue it with --resume"
        case .notResumable: "build without --resume"
        default: nil
        }
    }

    static func summary(_ report: BuildReport) -> String {
        let manifest = report.manifest
        let rows = manifest.rowCounts.values.reduce(0, +)
        let registered = report.registered.map {
            "\nregistered with the server at revision \($0.revision), schema version \($0.schemaVersion) (since \($0.registeredAt))"
        }
        let scopes = (report.scopeSeeds ?? []).map { seed in
            "\nwrote \(seed.output): \(seed.manifest.rowCounts.values.reduce(0, +)) rows of \(seed.value.keyString ?? "?") and the shared ones, \(seed.manifest.size) bytes\(seed.registered == nil ? "" : ", registered")"
        }
        return """
            wrote \(report.output): revision \(manifest.revision), \(rows) rows, \(manifest.size) bytes, sha256 \(manifest.sha256)
            manifest \(report.manifestPath)\(manifest.gzip.map { "; gzip \($0.file), \($0.size) bytes" } ?? "")\(registered ?? "")\(scopes.joined())
            """
    }
}
