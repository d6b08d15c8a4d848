import ArgumentParser
import Foundation
import Logging
import SeedSyncDemo
import SeedSyncModel
import SeedSyncServer
import SeedSyncStore

@main
struct SeedServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "seed-server",
        abstract: "Serve SeedSync protocol v1 from an embedded SQLite database, and manage that database.",
        subcommands: [Init.self, Load.self, Mutate.self, Compact.self, Serve.self]
    )
}

struct DatabaseOption: ParsableArguments {
    @Option(help: "The server database file.")
    var database: String
}

extension SeedServerCommand {
    struct Init: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create a server database from the demo dataset or a schema file.")

        @OptionGroup var options: DatabaseOption
        @Flag(help: "Use the built-in demo dataset (locations and events).") var demo = false
        @Option(help: "With --demo: number of events.") var events = 100_000
        @Option(help: "With --demo: number of locations.") var locations = 2_000
        @Option(help: "With --demo: random seed; the same seed gives the same data.") var seed: UInt64 = 1
        @Option(help: "A schema file: JSON with dataset, schemaVersion and types, as GET /v1/schema.") var schema: String?

        func validate() throws {
            guard demo != (schema != nil) else { throw ValidationError("give exactly one of --demo and --schema FILE") }
            guard events >= 0, locations >= 0 else { throw ValidationError("--events and --locations must not be negative") }
        }

        func run() async throws {
            if demo {
                let dataset = DemoDataset(events: events, locations: locations, seed: seed)
                try await SQLiteSyncStore.create(at: options.database, schema: DemoDataset.schema) { writer in
                    for type in DemoDataset.schema.types {
                        var rows = dataset.rows(of: type.name)
                        try writer.upsert(&rows, into: type.name)
                    }
                }
                print("created \(options.database): demo dataset, \(locations) locations, \(events) events at revision 1")
            } else if let schema {
                let parsed = try SchemaFile.read(schema)
                try await SQLiteSyncStore.create(at: options.database, schema: parsed)
                print("created \(options.database): dataset \(parsed.dataset), \(parsed.types.count) types, revision 0")
            }
        }
    }

    struct Load: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Bulk-load an NDJSON file (one object per line, key included) as one revision.")

        @OptionGroup var options: DatabaseOption
        @Option(help: "The entity type to load into.") var type: String
        @Option(help: "The NDJSON file.") var file: String

        func run() async throws {
            let store = try SQLiteSyncStore(path: options.database)
            let result = try await store.load(ndjsonFile: file, into: type)
            print("loaded \(result.rows) rows into \(type) as revision \(result.revision)")
        }
    }

    struct Mutate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Write random change sets (creates, updates, deletes) for demos and tests.")

        @OptionGroup var options: DatabaseOption
        @Option(help: "Number of change sets to write.") var changes: Int
        @Option(help: "Random seed; the same seed on the same data gives the same changes.") var seed: UInt64 = 1

        func validate() throws {
            guard changes >= 0 else { throw ValidationError("--changes must not be negative") }
        }

        func run() async throws {
            let store = try SQLiteSyncStore(path: options.database)
            if let revisions = try await ChangeGenerator.mutate(store, changes: changes, seed: seed) {
                print("wrote \(changes) change sets: revisions \(revisions.lowerBound) to \(revisions.upperBound)")
            } else {
                print("wrote no change sets")
            }
        }
    }

    struct Compact: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Drop change history older than the newest K revisions.")

        @OptionGroup var options: DatabaseOption
        @Option(name: .customLong("keep-revisions"), help: "Number of newest revisions whose change sets stay.") var keep: Int64

        func validate() throws {
            guard keep >= 0 else { throw ValidationError("--keep-revisions must not be negative") }
        }

        func run() async throws {
            let store = try SQLiteSyncStore(path: options.database)
            let result = try await store.compact(keepingRevisions: keep)
            print("removed \(result.removedChangeSets) change sets; clients can sync from revision \(result.minRevision)")
        }
    }
}

/// Reads a schema file for `init --schema`.
enum SchemaFile {
    static func read(_ path: String) throws -> DatasetSchema {
        guard let data = FileManager.default.contents(atPath: path) else { throw ValidationError("cannot read schema file \(path)") }
        do {
            return try JSONDecoder().decode(DatasetSchema.self, from: data)
        } catch {
            throw ValidationError("\(path) is not a schema file: expected JSON with dataset, schemaVersion and types")
        }
    }
}
