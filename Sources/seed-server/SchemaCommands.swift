import ArgumentParser
import Foundation
import Logging
import SeedSyncModel
import SeedSyncPostgres
import SeedSyncSQLiteStore
import SeedSyncStore

extension SeedServerCommand {
    struct Schema: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print a schema file for PostgreSQL tables, upgrade a store's schema, or list its versions.",
            subcommands: [Print.self, Upgrade.self, Versions.self, Reattach.self, RepairLog.self],
            defaultSubcommand: Print.self
        )
    }
}

extension SeedServerCommand.Schema {
    struct Print: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print a schema file for existing PostgreSQL tables (types, keys, nullability, references).",
            discussion:
                "Review it, then serve the tables with `seed-server init --database URL --schema FILE --attach`."
        )

        @OptionGroup var options: DatabaseOption
        @Option(help: "The tables, comma-separated; each becomes a type.") var tables: String
        @Option(help: "The dataset name (default: the database's name).") var dataset: String?
        @Option(help: "The schema version to start at.") var schemaVersion = 1

        func run() async throws {
            guard let location = try options.postgres() else {
                throw ValidationError("schema reads PostgreSQL tables: give a postgres:// --database")
            }
            let names = tables.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            let schema = try await PostgresSyncStore.schema(
                at: location, tables: names, dataset: dataset ?? location.database, schemaVersion: schemaVersion
            )
            print(try SchemaFile.text(schema))
        }
    }

    struct Upgrade: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add a schema version without an outage: clients of every older version keep syncing.",
            discussion: """
                Accepted changes: a new type, a new nullable field or one with a default, a field dropped (nullable \
                or with a default), a field renamed (stated with --rename), a default set or changed. The embedded \
                store changes its tables itself; on PostgreSQL, change the tables first (ALTER TABLE), then run this: \
                the new version is read from the tables, or from --schema FILE.
                """
        )

        @OptionGroup var options: DatabaseOption
        @Option(help: "The new version's schema file (required for an embedded store).") var schema: String?
        @Option(help: "A renamed field, as TYPE.OLD=NEW (repeat for more).") var rename: [String] = []
        @Option(help: "PostgreSQL, without --schema: tables to serve as new types, comma-separated.")
        var addTables: String?
        @Option(help: "PostgreSQL, without --schema: the new version's number (default: the newest plus one).")
        var schemaVersion: Int?

        func validate() throws {
            for text in rename where FieldRename(text) == nil {
                throw ValidationError("--rename \(text) is not TYPE.OLD=NEW")
            }
            let isPostgres = PostgresLocation.isURL(options.database)
            guard schema != nil || isPostgres else {
                throw ValidationError("an embedded store is upgraded from a schema file: give --schema FILE")
            }
            guard schema == nil || (addTables == nil && schemaVersion == nil) else {
                throw ValidationError(
                    "--add-tables and --schema-version read the tables; with --schema FILE, the file says both")
            }
        }

        func run() async throws {
            let renames = rename.compactMap(FieldRename.init)
            let upgrade: SchemaUpgrade
            if let path = schema {
                let schema = try SchemaFile.read(path)
                upgrade = try await options.withStore(maximumConnections: 2) { store in
                    try await store.upgrade(to: schema, renaming: renames)
                }
            } else {
                guard let location = try options.postgres() else {
                    throw ValidationError("without --schema FILE the tables are read: --database must be postgres://")
                }
                let tables = addTables?.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } ?? []
                let version = schemaVersion
                // Opening the store reports the tables that changed since the version it serves: the
                // very changes this command records, so not worth a line.
                var quiet = Logger(label: "seed-server.postgres")
                quiet.logLevel = .critical
                upgrade = try await PostgresSyncStore.withStore(at: location, maximumConnections: 2, logger: quiet) {
                    store in
                    try await store.upgradeFromTables(adding: tables, renaming: renames, schemaVersion: version)
                }
            }
            let changes = upgrade.changes.map(\.description).joined(separator: ", ")
            print(
                "schema version \(upgrade.version.number) from revision \(upgrade.version.revision) on: \(changes); versions served: \(upgrade.history.versions.map { String($0.number) }.joined(separator: ", "))"
            )
        }
    }

    struct Reattach: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "PostgreSQL: take back served tables whose capture was lost (a table rebuilt, triggers dropped).",
            discussion: """
                After a served table was dropped and created again, or its seedsync_* triggers were dropped or \
                disabled, its writes are no longer logged and servers answer 503 schema_mismatch for it. This \
                checks each table against the newest schema version, makes its capture again, and makes its rows \
                one bulk revision: clients download a new snapshot, and nothing they hold is out of date.
                """
        )

        @OptionGroup var options: DatabaseOption
        @Option(help: "The served tables to take back, comma-separated.") var tables: String

        func run() async throws {
            guard let location = try options.postgres() else {
                throw ValidationError("reattach is for PostgreSQL tables: give a postgres:// --database")
            }
            let names = tables.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            // Opening the store reports the tables that lost their capture: the very tables this
            // command takes back, so not worth a line.
            var quiet = Logger(label: "seed-server.postgres")
            quiet.logLevel = .critical
            let revision = try await PostgresSyncStore.withStore(at: location, maximumConnections: 2, logger: quiet) {
                try await $0.reattach(names)
            }
            print(
                "reattached \(names.joined(separator: ", ")): their rows are revision \(revision), and every later write to them is captured; clients download a new snapshot"
            )
        }
    }

    struct RepairLog: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "repair-log",
            abstract: "PostgreSQL: mend change sets logged while a served column was away and came back.",
            discussion: """
                A served column renamed and renamed back, dropped and added again, or retyped and retyped back, \
                with writes in between and no schema upgrade, leaves rows in the change log without the field: \
                servers answer them 503 schema_mismatch (no value for the field). This gives each such row the \
                field's value as the table holds it now (a row deleted since: the field's default, or the zero \
                value of its type), so clients sync through them and keep their databases.
                """
        )

        @OptionGroup var options: DatabaseOption

        func run() async throws {
            guard let location = try options.postgres() else {
                throw ValidationError("repair-log is for PostgreSQL stores: give a postgres:// --database")
            }
            var quiet = Logger(label: "seed-server.postgres")
            quiet.logLevel = .critical
            let repair = try await PostgresSyncStore.withStore(at: location, maximumConnections: 2, logger: quiet) {
                try await $0.repairLog()
            }
            guard !repair.rows.isEmpty else {
                print("every logged row has every field of its version: nothing to mend")
                return
            }
            let counts = repair.rows.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }
            print("mended \(counts.joined(separator: ", ")) logged rows with the values the tables hold now")
        }
    }

    struct Versions: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the schema versions a store serves, oldest first, with the revision each was made at.")

        @OptionGroup var options: DatabaseOption
        @Flag(help: "Print every version's schema as JSON.") var json = false

        func run() async throws {
            let history = try await options.withStore(maximumConnections: 2) { try await $0.schemaHistory() }
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
                print(String(decoding: try encoder.encode(history.versions), as: UTF8.self))
                return
            }
            for version in history.versions {
                let renames =
                    version.renames.isEmpty
                    ? "" : " renames: \(version.renames.map(\.description).joined(separator: ", "))"
                print(
                    "version \(version.number): from revision \(version.revision), \(version.schema.types.count) types\(renames)"
                )
            }
        }
    }
}

/// Reads and prints schema files.
enum SchemaFile {
    /// Reads a schema file for `init --schema` and `schema upgrade --schema`.
    static func read(_ path: String) throws -> DatasetSchema {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ValidationError("cannot read schema file \(path)")
        }
        do {
            return try JSONDecoder().decode(DatasetSchema.self, from: data)
        } catch {
            throw ValidationError("\(path) is not a schema file: expected JSON with dataset, schemaVersion and types")
        }
    }

    /// A schema as a file's text: pretty JSON, keys sorted.
    static func text(_ schema: DatasetSchema) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(schema), as: UTF8.self)
    }
}
