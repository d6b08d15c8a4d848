import ArgumentParser
import Foundation
import Logging
import SeedSyncCLI
import SeedSyncDemo
import SeedSyncModel
import SeedSyncPostgres
import SeedSyncSQLiteStore
import SeedSyncServer
import SeedSyncStore

@main
struct SeedServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "seed-server",
        abstract: "Serve SeedSync protocol v1 from an embedded SQLite file or a PostgreSQL database, and manage it.",
        subcommands: [
            Init.self, Schema.self, Load.self, Mutate.self, Compact.self, Seeds.self, Status.self, Serve.self,
        ]
    )
}

struct DatabaseOption: ParsableArguments {
    @Option(help: "The server database: a file (embedded SQLite) or postgres://USER@HOST:PORT/DATABASE.")
    var database: String

    @Option(help: "A file whose first line is the PostgreSQL password (default: PGPASSWORD).")
    var databasePasswordFile: String?

    /// The PostgreSQL location, when `--database` is a URL.
    func postgres() throws -> PostgresLocation? {
        guard PostgresLocation.isURL(database) else { return nil }
        let environment = ProcessInfo.processInfo.environment
        return try PostgresLocation(
            url: database, password: PostgresLocation.password(environment: environment, file: databasePasswordFile))
    }

    /// Runs `body` with the store at `--database`, open for the duration; a PostgreSQL store logs
    /// (its connections' failures) through `logger`.
    func withStore<T: Sendable>(
        maximumConnections: Int = 20, logger: Logger = Logger(label: "seed-server.postgres"),
        _ body: @Sendable (any MaintainedSyncStore) async throws -> T
    ) async throws -> T {
        if let location = try postgres() {
            return try await PostgresSyncStore.withStore(
                at: location, maximumConnections: maximumConnections, logger: logger
            ) {
                try await body($0)
            }
        }
        return try await body(try SQLiteSyncStore(path: database))
    }

    /// What `init` reports it created.
    var name: String { (try? postgres())?.description ?? database }
}

extension SeedServerCommand {
    struct Init: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a server database from the demo dataset or a schema file.")

        @OptionGroup var options: DatabaseOption
        @Flag(help: "Use the built-in demo dataset (locations and events).") var demo = false
        @Option(help: "With --demo: number of events.") var events = 100_000
        @Option(help: "With --demo: number of locations.") var locations = 2_000
        @Option(help: "With --demo: random seed; the same seed gives the same data.") var seed: UInt64 = 1
        @Option(help: "A schema file: JSON with dataset, schemaVersion and types, as GET /v1/schema.") var schema:
            String?
        @Flag(help: "PostgreSQL: serve the existing tables the schema file names instead of creating them.")
        var attach = false

        func validate() throws {
            guard demo != (schema != nil) else { throw ValidationError("give exactly one of --demo and --schema FILE") }
            guard events >= 0, locations >= 0 else {
                throw ValidationError("--events and --locations must not be negative")
            }
            guard !attach || (schema != nil && PostgresLocation.isURL(options.database)) else {
                throw ValidationError("--attach needs --schema FILE and a postgres:// --database")
            }
        }

        func run() async throws {
            let parsed = try schema.map(SchemaFile.read) ?? DemoDataset.schema
            if attach, let location = try options.postgres() {
                let revision = try await PostgresSyncStore.attach(at: location, schema: parsed)
                print(
                    "attached \(parsed.types.count) tables of \(location) as dataset \(parsed.dataset); their rows are revision \(revision), and every later write to them is captured"
                )
                return
            }
            if demo {
                let dataset = DemoDataset(events: events, locations: locations, seed: seed)
                try await create(parsed) { try await dataset.load(into: $0) }
                print("created \(options.name): demo dataset, \(locations) locations, \(events) events at revision 1")
            } else {
                try await create(parsed) { _ in }
                print("created \(options.name): dataset \(parsed.dataset), \(parsed.types.count) types, revision 0")
            }
        }

        /// Creates the store, filled by `populate`; a failure leaves nothing behind on SQLite and
        /// tables at revision 0 on PostgreSQL (the load is one transaction).
        private func create(
            _ schema: DatasetSchema, populate: @escaping @Sendable (any MaintainedSyncStore) async throws -> Void
        ) async throws {
            if let location = try options.postgres() {
                try await PostgresSyncStore.create(at: location, schema: schema)
                try await PostgresSyncStore.withStore(at: location, maximumConnections: 2) { try await populate($0) }
            } else {
                try await SQLiteSyncStore.create(at: options.database, schema: schema, populate: populate)
            }
        }
    }

    struct Load: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Bulk-load an NDJSON file (one object per line, key included) as one revision.")

        @OptionGroup var options: DatabaseOption
        @Option(help: "The entity type to load into.") var type: String
        @Option(help: "The NDJSON file.") var file: String

        func run() async throws {
            let (type, file) = (self.type, self.file)
            let result = try await options.withStore(maximumConnections: 2) { store in
                try await store.load(ndjsonFile: file, into: type)
            }
            print("loaded \(result.rows) rows into \(type) as revision \(result.revision)")
        }
    }

    struct Mutate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write random change sets (creates, updates, deletes) for demos and tests.")

        @OptionGroup var options: DatabaseOption
        @Option(help: "Number of change sets to write.") var changes: Int
        @Option(help: "Random seed; the same seed on the same data gives the same changes.") var seed: UInt64 = 1

        func validate() throws {
            guard changes >= 0 else { throw ValidationError("--changes must not be negative") }
        }

        func run() async throws {
            let (changes, seed) = (self.changes, self.seed)
            if let revisions = try await options.withStore(
                maximumConnections: 2,
                { store in try await ChangeGenerator.mutate(store, changes: changes, seed: seed) })
            {
                print("wrote \(changes) change sets: revisions \(revisions.lowerBound) to \(revisions.upperBound)")
            } else {
                print("wrote no change sets")
            }
        }
    }

    struct Compact: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Drop change history older than the newest K revisions, but none a registered seed needs.")

        @OptionGroup var options: DatabaseOption
        @Option(
            name: .customLong("keep-revisions"), parsing: .unconditional,  // `-5` is refused by name
            help: "Number of newest revisions whose change sets stay.")
        var keep: Int64

        func validate() throws {
            guard keep >= 0 else { throw ValidationError("--keep-revisions must not be negative") }
        }

        func run() async throws {
            let keep = self.keep
            let result = try await options.withStore(maximumConnections: 2) { store in
                try await store.compact(keepingRevisions: keep)
            }
            let pinned = result.pinnedBy.map {
                "; kept back to revision \($0.revision) for the registered seed \($0.sha256) (retire it with `seed-server seeds retire`)"
            }
            print(
                "removed \(result.removedChangeSets) change sets; clients can sync from revision \(result.minRevision)\(pinned ?? "")"
            )
        }
    }
}

extension SeedServerCommand {
    struct Seeds: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "List the seeds registered with `seed-build --register`, or retire one so compaction may drop its history.",
            subcommands: [List.self, Retire.self], defaultSubcommand: List.self)

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "List the registered seeds, oldest revision first.")

            @OptionGroup var options: DatabaseOption

            func run() async throws {
                let seeds = try await options.withStore(maximumConnections: 2) { try await $0.registeredSeeds() }
                for seed in seeds {
                    let state = seed.retiredAt.map { "retired \($0)" } ?? "pins the history"
                    print(
                        "\(seed.sha256) revision \(seed.revision) schema version \(seed.schemaVersion)\(seed.scopes.map { " scopes \(ScopeList($0))" } ?? "") registered \(seed.registeredAt), \(state)\(seed.url.map { ", published at \($0)" } ?? "")"
                    )
                }
                if seeds.isEmpty { print("no registered seeds") }
            }
        }

        struct Retire: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Retire a registered seed: compaction no longer keeps history for it.")

            @OptionGroup var options: DatabaseOption
            @Option(help: "The seed's SHA-256, as its manifest and `seeds list` give it.") var sha256: String

            func run() async throws {
                let sha256 = self.sha256
                guard
                    let seed = try await options.withStore(
                        maximumConnections: 2, { try await $0.retireSeed(sha256: sha256) })
                else {
                    throw CommandFailure("no registered seed has the SHA-256 \(sha256)")
                }
                print("retired the seed \(seed.sha256) at revision \(seed.revision) (\(seed.retiredAt ?? "earlier"))")
            }
        }
    }
}

extension SeedServerCommand {
    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Show the store's state (revision, compaction floor, schema versions, registered seeds) and, with --server, the live requests a running server holds.",
            discussion:
                "The admin token for --server comes from --admin-token-file, SEED_SERVER_ADMIN_TOKEN or the first of SEED_SERVER_ADMIN_TOKENS; it is never printed."
        )

        @OptionGroup var options: DatabaseOption
        @Option(help: "A running seed-server on this database, whose /metrics says what it holds (an admin token).")
        var server: String?
        @Option(help: "A file whose first line is an admin token of --server.") var adminTokenFile: String?
        @Flag(help: "Print the status as one JSON object.") var json = false

        func validate() throws {
            if let server {
                guard URL(string: server)?.host != nil else { throw ValidationError("--server must be a URL") }
            }
        }

        func run() async throws {
            var status = try await options.withStore(maximumConnections: 2) { try await ServerStatus(store: $0) }
            if let server, let url = URL(string: server) {
                let token = try adminToken()
                do {
                    try await status.readProcess(at: url, adminToken: token)
                } catch let error as ServerStatusError {
                    throw CommandFailure(error.description)
                }
            }
            print(json ? String(decoding: try JSONEncoder.stable().encode(status), as: UTF8.self) : "\(status)")
        }

        private func adminToken() throws -> String {
            let token: String?
            do {
                token = try TokenSet.adminToken(environment: ProcessInfo.processInfo.environment, file: adminTokenFile)
            } catch let error as TokenFileError {
                throw CommandFailure("\(error)")
            }
            guard let token else {
                throw CommandFailure(
                    "--server needs an admin token: --admin-token-file FILE, SEED_SERVER_ADMIN_TOKEN or SEED_SERVER_ADMIN_TOKENS"
                )
            }
            return token
        }
    }
}
