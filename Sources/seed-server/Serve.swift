import ArgumentParser
import Foundation
import Logging
import SeedSyncSeed
import SeedSyncServer

extension SeedServerCommand {
    struct Serve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Serve protocol v1. Tokens come from SEED_SERVER_TOKENS / SEED_SERVER_WRITE_TOKENS / SEED_SERVER_ADMIN_TOKENS or token files, and JWTs are verified with the keys the --jwt options name.",
            discussion: "Prints 'listening on http://HOST:PORT' on stdout once ready; --port 0 picks a free port."
        )

        @OptionGroup var options: DatabaseOption
        @Option(help: "Address to listen on.") var host = "127.0.0.1"
        @Option(help: "Port to listen on; 0 picks a free one.") var port = 8080
        @Option(help: "File with read tokens (comma- or line-separated).") var tokenFile: String?
        @Option(help: "File with write tokens, which may also push change sets.") var writeTokenFile: String?
        @Option(help: "File with admin tokens (comma- or line-separated).") var adminTokenFile: String?
        @Flag(help: "Serve without authentication when no token is configured (local experiments only).")
        var allowAnonymous = false
        @OptionGroup(title: "JWTs from the app's identity provider") var jwt: JWTOptions
        @Option(help: "Largest request body in bytes, compressed or not.") var maxBodySize = 8 << 20
        @Option(help: "Seconds a request body may take to arrive whole; slower ones get 408.") var bodyTimeout = 30
        @Option(help: "Days the result of a pushed change set is kept for a retry with the same id.")
        var pushRetentionDays = 7
        @Option(help: "Longest a caught-up sync request asking to wait is held for a new revision, in seconds.")
        var maxWait = 55
        @Option(help: "Most sync requests held at once; more get 503 with Retry-After. Raise `ulimit -n` to match.")
        var maxWaitingRequests = 10_000
        @Option(
            help:
                "Seconds a live read (GET /v1/changes with live) of a caught-up client is held for a new revision, the same for every client (at most --max-wait); a cache in front must let requests wait for another's answer longer."
        )
        var liveWait = 20
        @Option(help: "Revisions per cacheable block of GET /v1/changes.") var changesBlockSize: Int64 = 1_000
        @Flag(
            help:
                "Mark GET /v1/changes and snapshot answers public, so shared caches keep them: only behind a cache that checks tokens (GET /v1/auth) or for data anyone may read."
        )
        var sharedCache = false
        @Option(
            help:
                "Seconds a snapshot page may be served after it was read (kept in memory, and max-age for HTTP caches); 0 reads each afresh."
        )
        var snapshotMaxAge = 30
        @Option(
            help: ArgumentHelp(
                "Serve the seeds published in this folder (seed-build's seeds with their manifests) at GET /v1/seeds/SHA256/FILE, with Range.",
                valueName: "FOLDER"))
        var seeds: String?
        @Option(
            help: ArgumentHelp(
                "Sign every GET /v1/changes answer with this Ed25519 private key (PEM, as seed-build keygen writes; or the PEM in SEED_SERVER_ANSWER_KEY), so that clients trusting its public key refuse an answer a cache altered.",
                valueName: "FILE"))
        var answerKey: String?
        @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.", transform: Serve.level)
        var logLevel: Logger.Level = .info
        @Option(help: "Log lines as text, or as one JSON object per line (json) for log collectors.")
        var logFormat: LogFormat = .text

        func validate() throws {
            guard (0...65_535).contains(port) else { throw ValidationError("--port must be between 0 and 65535") }
            guard maxBodySize > 0 else { throw ValidationError("--max-body-size must be positive") }
            guard bodyTimeout > 0 else { throw ValidationError("--body-timeout must be positive") }
            guard pushRetentionDays > 0 else { throw ValidationError("--push-retention-days must be positive") }
            guard maxWait >= 0 else { throw ValidationError("--max-wait must be 0 or more") }
            guard maxWaitingRequests >= 0 else { throw ValidationError("--max-waiting-requests must be 0 or more") }
            guard liveWait >= 0 else { throw ValidationError("--live-wait must be 0 or more") }
            guard changesBlockSize > 0 else { throw ValidationError("--changes-block-size must be positive") }
            guard snapshotMaxAge >= 0 else { throw ValidationError("--snapshot-max-age must be 0 or more") }
            var isFolder: ObjCBool = false
            if let seeds, !FileManager.default.fileExists(atPath: seeds, isDirectory: &isFolder) || !isFolder.boolValue
            {
                throw ValidationError("--seeds \(seeds) is not a folder")
            }
        }

        /// The key of `--answer-key`, or the one in `SEED_SERVER_ANSWER_KEY`.
        private func answerSigningKey(environment: [String: String] = ProcessInfo.processInfo.environment) throws
            -> SeedSigningKey?
        {
            if let answerKey { return try SeedSigningKey.read(from: answerKey) }
            return try environment["SEED_SERVER_ANSWER_KEY"].map { text in
                do {
                    return try SeedSigningKey(pem: text)
                } catch {
                    throw ValidationError("SEED_SERVER_ANSWER_KEY is \(error)")
                }
            }
        }

        func run() async throws {
            let tokens = try TokenSet.load(
                environment: ProcessInfo.processInfo.environment,
                readTokenFile: tokenFile,
                writeTokenFile: writeTokenFile,
                adminTokenFile: adminTokenFile
            )
            let jwt = try self.jwt.configuration(environment: ProcessInfo.processInfo.environment)
            guard !tokens.isEmpty || jwt != nil || allowAnonymous else {
                throw ValidationError(
                    "no token configured: set SEED_SERVER_TOKENS, SEED_SERVER_WRITE_TOKENS or SEED_SERVER_ADMIN_TOKENS, pass --token-file, give JWT keys (--jwks-url, --jwks-file, SEED_SERVER_JWT_SECRET), or use --allow-anonymous for local experiments"
                )
            }
            var logger =
                switch logFormat {
                case .text: Logger(label: "seed-server")
                case .json: Logger(label: "seed-server") { JSONLogHandler(label: $0) }
                }
            logger.logLevel = logLevel
            var configuration = ServerConfiguration(
                host: host,
                port: port,
                tokens: tokens.isEmpty && jwt == nil ? nil : tokens,
                jwt: jwt,
                maxRequestBodySize: maxBodySize,
                requestBodyTimeout: .seconds(bodyTimeout),
                pushRetention: .seconds(pushRetentionDays * 86_400),
                maxWait: .seconds(maxWait),
                maxWaitingRequests: maxWaitingRequests,
                liveReadWait: .seconds(liveWait),
                changesBlockSize: changesBlockSize,
                sharedCache: sharedCache,
                snapshotMaxAge: .seconds(snapshotMaxAge),
                seedsFolder: seeds
            )
            configuration.answerKey = try answerSigningKey()?.key
            let host = self.host
            let served = configuration
            let log = logger
            try await options.withStore(logger: log) { store in
                let app = try await buildApplication(store: store, configuration: served, logger: log) { port in
                    FileHandle.standardOutput.write(Data("listening on http://\(host):\(port)\n".utf8))
                }
                try await app.runService()
            }
        }
    }
}

extension SeedServerCommand.Serve {
    /// `--log-level`'s value: a level of swift-log by name.
    static func level(_ name: String) throws -> Logger.Level {
        guard let level = Logger.Level(rawValue: name) else {
            throw ValidationError(
                "--log-level must be one of \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return level
    }
}

/// How `serve` writes its log lines (to standard error).
enum LogFormat: String, ExpressibleByArgument, CaseIterable {
    case text, json
}
