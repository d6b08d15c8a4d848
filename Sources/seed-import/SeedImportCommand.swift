import ArgumentParser
import Foundation
import SeedSyncCLI
import SeedSyncClient
import SeedSyncImport
import SeedSyncModel
import SeedSyncSeed

@main
struct SeedImportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "seed-import",
        abstract:
            "Install a seed as an app's database on first run, then push local edits and catch up with the server.",
        subcommands: [SyncCommand.self, WriteCommand.self],
        defaultSubcommand: SyncCommand.self
    )
}

struct SyncCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Install the seed when there is no database, push local change sets, catch up (the default).",
        discussion: """
            The token comes from SEED_TOKEN or --token-file. Without a database at --database the seed \
            is verified and installed (with neither --seed nor --seed-url, the newest seed the server \
            offers, or a snapshot when it offers none); then the local change sets queued by `seed-import write` are \
            pushed and /v1/sync is applied from the database's revision until the server has nothing \
            more. Exit status 0 means caught up with nothing left to push; a token that may not push \
            catches up, says how many change sets wait, and exits 1.
            """
    )

    @Option(help: "The shipped seed, plain or .gz (its manifest is read from beside it).") var seed: String?
    @Option(
        help: ArgumentHelp(
            "Instead of --seed: the address of a published seed, plain or .gz, with its manifest beside it; downloaded (resuming a cut download) when the database is installed.",
            valueName: "URL")) var seedURL: String?
    @Option(help: "The app's database file.") var database: String
    @OptionGroup var connection: ServerOptions
    @Flag(help: "Catch up once and exit (the default).") var once = false
    @Flag(help: "Keep catching up, every --interval seconds, until interrupted.") var watch = false
    @Option(help: "With --watch: seconds between runs.") var interval: Double = 60
    @Flag(
        help:
            "Keep the database current until SIGINT or SIGTERM: catch up, then hold a live sync request until the server has something newer (a line per applied change set on stdout)."
    ) var live = false
    @Option(
        parsing: .unconditional,  // `-1` is a value to refuse by name, not an unknown flag
        help:
            "The schema version this app is built for: the database migrates up to it (not past it) when the server serves it; a newer seed is refused. Default: the newest the server serves."
    ) var expectSchemaVersion: Int?
    @Flag(name: .customLong("no-reseed-if-newer"), help: "Keep the database even when the seed is newer.")
    var noReseed = false
    @Option(help: "Change sets per POST /v1/sync request (catch-ups read the log in the server's blocks).")
    var syncLimit = 1000
    @Option(
        help:
            "Rows per transaction, about: while the server has more, answers are read until they hold this many and applied together, each row written once in key order (fewer page writes into a large database, more memory)."
    ) var rowsPerTransaction = 50_000
    @Option(
        help:
            "MiB of page cache for a catch-up held in one transaction (what bounds its memory for pages: past it, changed pages go to the WAL early); 0 commits every batch of --rows-per-transaction on its own."
    ) var cacheMib = 128
    @Option(help: "Seconds a request may wait for data.") var timeout: Double = 30
    @Option(help: "Seconds to wait for another seed-import of the same database.") var lockTimeout: Double = 30
    @Option(
        help:
            "What a server change to a row with a pending local edit does to the edit: server-wins (the edit is dropped) or merge-fields (rebased on the server's row when they changed different fields)."
    ) var conflicts: ConflictPolicy = .serverWins
    @Option(
        help: ArgumentHelp(
            "Use the seed only when its manifest is signed by this Ed25519 public key: a PEM file, or the key in base64 (repeatable: any one of them).",
            valueName: "KEY")) var trust: [String] = []
    @Option(
        help: ArgumentHelp(
            "Refuse every change log answer (GET /v1/changes, which caches may pass on) not signed by this Ed25519 public key, the one seed-server serve --answer-key signs with: a PEM file, or the key in base64 (repeatable: any one of them).",
            valueName: "KEY")) var trustAnswers: [String] = []
    @Flag(help: "Print a JSON summary on stdout (one line per run with --watch).") var json = false
    @Flag(help: "Print nothing but errors.") var quiet = false

    func validate() throws {
        guard [once, watch, live].filter({ $0 }).count <= 1 else {
            throw ValidationError("--once, --watch and --live exclude each other")
        }
        guard (expectSchemaVersion ?? 1) >= 1 else {
            throw ValidationError("--expect-schema-version must be 1 or more")
        }
        guard seed == nil || seedURL == nil else { throw ValidationError("give at most one of --seed and --seed-url") }
        guard seed?.isEmpty != true else { throw ValidationError("--seed needs a path") }
        if let seedURL, URL(string: seedURL).flatMap({ ["http", "https"].contains($0.scheme ?? "") }) != true {
            throw ValidationError("--seed-url must be an http:// or https:// address")
        }
        guard interval > 0, syncLimit > 0, rowsPerTransaction > 0, cacheMib >= 0, timeout > 0, lockTimeout >= 0 else {
            throw ValidationError(
                "--interval, --sync-limit, --rows-per-transaction and --timeout must be positive, --cache-mib and --lock-timeout not negative"
            )
        }
    }

    func run() async throws {
        do {
            try await sync()
        } catch {
            throw CommandFailure.hinted(error, by: ServerOptions.hint(for:))
        }
    }

    private func sync() async throws {
        FileSystem.reportFileSizeLimitAsError()
        var server = try connection.client(requestTimeout: timeout)
        server.answerKeys = try trustAnswers.map { try SeedPublicKey.resolve($0).key }
        let importer = SeedImporter(
            configuration: .init(
                seed: seed ?? "", database: database,
                server: server,
                expectedSchemaVersion: expectSchemaVersion, reseedIfNewer: !noReseed, syncLimit: syncLimit,
                maxRowsPerTransaction: rowsPerTransaction, catchUpCacheMiB: cacheMib, lockTimeout: lockTimeout,
                conflicts: conflicts.resolution,
                trustedKeys: TrustedKeys(try trust.map(SeedPublicKey.resolve)),
                seedURL: seedURL.flatMap(URL.init(string:))
            ))
        guard !live else {
            try await runLive(importer.configuration)
            return
        }
        let progress = ImportProgress(enabled: !quiet && ImportProgress.stderrIsTerminal)
        guard watch else {
            try await runOnce(importer, progress: progress)
            return
        }
        while true {
            do {
                try await runOnce(importer, progress: progress)
            } catch let error as SyncClientError where error.code == .unreachable || error.code == .serverError {
                // The server may come back: say so and try at the next interval.
                progress.end()
                FileHandle.standardError.write(Data("seed-import: \(error); trying again in \(interval) s\n".utf8))
            }
            try await Task.sleep(for: .milliseconds(Int(interval * 1000)))
        }
    }

    /// `--live`: a ``SyncEngine`` until SIGINT or SIGTERM, which stop it cleanly (exit 0); a
    /// failure a retry cannot fix stops it with that error. A line per applied change set on
    /// stdout (JSON with `--json`), the engine's states on stderr.
    private func runLive(_ configuration: SeedImporter.Configuration) async throws {
        let json = self.json
        let quiet = self.quiet
        let engine = SyncEngine(configuration: configuration) { event in
            guard case .applied(let changeSet) = event else { return }
            FileHandle.standardOutput.write(Data((Self.line(for: changeSet, json: json) + "\n").utf8))
        }
        let signals = [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number)
            source.setEventHandler { Task { await engine.stop() } }
            source.resume()
            return source
        }
        defer { for source in signals { source.cancel() } }
        let states = engine.states()
        await engine.start()
        for await state in states {
            if !quiet { FileHandle.standardError.write(Data("seed-import: \(state)\n".utf8)) }
            if case .failed(let error) = state {
                await engine.stop()
                throw error
            }
        }
    }

    /// One applied change set: `revision 42: events 1 created, 2 updated, 0 deleted`, or its keys as JSON.
    static func line(for changeSet: AppliedChangeSet, json: Bool) -> String {
        let types = changeSet.types.sorted { $0.key < $1.key }
        guard json else {
            let counts = types.map { name, keys in
                "\(name) \(keys.created.count) created, \(keys.updated.count) updated, \(keys.deleted.count) deleted"
            }
            return "revision \(changeSet.revision): " + (counts.isEmpty ? "no rows" : counts.joined(separator: "; "))
        }
        let object: JSONValue = .object([
            "revision": .int(changeSet.revision),
            "types": .object(
                Dictionary(
                    uniqueKeysWithValues: types.map { name, keys in
                        (
                            name,
                            JSONValue.object([
                                "created": .array(keys.created), "updated": .array(keys.updated),
                                "deleted": .array(keys.deleted),
                            ])
                        )
                    })),
        ])
        return String(decoding: (try? JSONEncoder.stable().encode(object)) ?? Data(), as: UTF8.self)
    }

    private func runOnce(_ importer: SeedImporter, progress: ImportProgress) async throws {
        let quiet = self.quiet
        let report = try await importer.run { event in
            progress.handle(event)
            if !quiet, let line = Self.outcome(of: event) {
                progress.end()
                FileHandle.standardError.write(Data("seed-import: \(line)\n".utf8))
            }
        }
        progress.end()
        if let expected = report.expectedVersionNotServed {
            FileHandle.standardError.write(
                Data(
                    "seed-import: warning: the server does not serve schema version \(expected) (--expect-schema-version) yet: the database stays at version \(report.schemaVersion.map(String.init) ?? "?"), and a later run migrates it once the server serves it\n"
                        .utf8))
        }
        if let problem = report.seedProblem {
            FileHandle.standardError.write(
                Data(
                    "seed-import: warning: the shipped seed was not used, the database was kept and synced: \(problem)\n"
                        .utf8))
        }
        // Written straight to the descriptor: with --watch, each line must leave at once.
        if json {
            FileHandle.standardOutput.write(try JSONEncoder.stable().encode(report) + Data("\n".utf8))
        } else if !quiet {
            FileHandle.standardOutput.write(Data((Self.summary(report) + "\n").utf8))
        }
    }

    static func summary(_ report: ImportReport) -> String {
        var lines: [String] = []
        if report.installed {
            let from = report.installedFrom.map {
                " from the \($0.kind.rawValue.replacingOccurrences(of: "-", with: " ")) \($0.location)"
            }
            lines.append("installed \(report.database)\(from ?? "")")
            if let way = report.wayIn { lines.append("  the way in by bytes: \(way)") }
        }
        for replacement in report.replacements {
            lines.append(
                "replaced \(report.database) (\(replacement.reason.rawValue)) with the \(replacement.source.rawValue) at revision \(replacement.toRevision)"
            )
        }
        if let migration = report.migration {
            lines.append(
                "migrated from schema version \(migration.fromVersion) to \(migration.toVersion): \(migration.changes.joined(separator: ", ")); \(migration.rowsDownloaded) rows, \(migration.bytesDownloaded) bytes downloaded"
            )
        }
        lines.append(
            "caught up: revision \(report.fromRevision) -> \(report.toRevision), \(report.changeSets) change sets "
                + "(\(report.inserted) inserted, \(report.updated) updated, \(report.deleted) deleted) in \(String(format: "%.2f", report.seconds)) s"
        )
        if report.pushed + report.conflicts + report.rejected + report.pending > 0 {
            lines.append(
                "pushed: \(report.pushed) applied, \(report.conflicts) conflicts, \(report.rejected) rejected, \(report.pending) waiting"
            )
        }
        return lines.joined(separator: "\n")
    }

    /// A key map as `events -1 -> 311, locations -1 -> 7`: types, then temporary keys, in order.
    static func describe(_ keys: [String: [String: JSONValue]]) -> String {
        keys.sorted { $0.key < $1.key }.flatMap { type, map in
            map.sorted { $0.key < $1.key }.map { "\(type) \($0.key) -> \($0.value.keyString ?? "?")" }
        }.joined(separator: ", ")
    }

    /// One line for the outcome of a pushed local change set; `nil` for other events.
    static func outcome(of event: ImportEvent) -> String? {
        switch event {
        case .pushed(let id, let revision, let keys):
            let mapped = describe(keys)
            return "change set \(id) applied as revision \(revision)" + (mapped.isEmpty ? "" : " (\(mapped))")
        case .conflict(let id, let changeSet):
            let rows = changeSet.changes.flatMap { changes in
                (changes.update + changes.delete).map { "\(changes.type)[\($0.keyString ?? "?")]" }
            }
            return
                "conflict: change set \(id) was not applied, the server's rows were kept: \(rows.joined(separator: ", "))"
        case .rejected(let id, let code, let message):
            return "rejected (\(code)): change set \(id): \(message)"
        case .merged(let conflict, _):
            return
                "merged: the server changed \(conflict.type)[\(conflict.key.keyString ?? "?")], the local edit was rebased on it and will be pushed"
        case .overwritten(let conflict):
            return
                "overwritten: the server changed \(conflict.type)[\(conflict.key.keyString ?? "?")], its pending local edit lost"
        default:
            return nil
        }
    }
}

/// `--conflicts`: the ``ConflictResolution`` a command line can name.
enum ConflictPolicy: String, ExpressibleByArgument, CaseIterable {
    case serverWins = "server-wins"
    case mergeFields = "merge-fields"

    var resolution: ConflictResolution {
        switch self {
        case .serverWins: .serverWins
        case .mergeFields: .mergeFields
        }
    }
}
