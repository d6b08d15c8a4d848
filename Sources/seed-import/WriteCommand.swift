import ArgumentParser
import Foundation
import SeedSyncCLI
import SeedSyncImport
import SeedSyncModel
import SeedSyncSeed

/// `seed-import write`: local edits from a file, applied to the app's database and queued.
struct WriteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "write",
        abstract: "Apply local change sets to the app's database and queue them for the next sync.",
        discussion: """
            --file holds a JSON array of change sets in the shape the server sends, without revisions: \
            {"types": ["locations", "events"], "locations": {"create": [-1], "attributes": {"-1": {…}}}, \
            "events": {"update": [5], "attributes": {"5": {"title": "New title"}}}}. New rows of \
            integer-keyed types take negative temporary keys, which later fields and change sets of \
            the file may reference (any other negative key names a row an earlier write created and \
            the server has not answered yet); updates may give some fields only; deletes need no attributes. \
            Each change set is applied to the tables at once and queued with an id and the revisions \
            it is based on, taken from the local rows; the next `seed-import` run pushes them. Prints \
            each change set's id and the temporary keys it was given in the database.
            """
    )

    @Option(help: "The app's database file (installed by a first seed-import run).") var database: String
    @Option(help: "A JSON file holding an array of change sets.") var file: String
    @Flag(help: "Print the ids and keys as JSON on stdout.") var json = false

    func run() async throws {
        let changeSets = try Self.read(file)
        let queued = try await LocalWriter(database: database).write(changeSets: changeSets, from: file).map {
            QueuedLine(
                id: $0.id,
                keys: $0.keys.mapValues { Dictionary(uniqueKeysWithValues: $0.map { (String($0.key), $0.value) }) })
        }
        if json {
            FileHandle.standardOutput.write(try JSONEncoder.stable().encode(["changeSets": queued]) + Data("\n".utf8))
            return
        }
        for change in queued {
            let mapped = SyncCommand.describe(change.keys)
            print("queued change set \(change.id)" + (mapped.isEmpty ? "" : ": \(mapped)"))
        }
    }

    /// One queued change set: its id, and the key each temporary key of the file was given.
    struct QueuedLine: Encodable {
        var id: String
        var keys: [String: [String: JSONValue]]
    }

    private static func read(_ path: String) throws -> [ChangeSet] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CommandFailure("cannot read \(path)")
        }
        do {
            guard case .array(let items) = try JSONParser.parse(Array(data)) else {
                throw CommandFailure("\(path) must hold a JSON array of change sets")
            }
            return try items.enumerated().map { index, item in try ChangeSet(json: item, at: "[\(index)]") }
        } catch let error as CommandFailure {
            throw error
        } catch {
            throw CommandFailure("\(path) is not an array of change sets: \(error)")
        }
    }
}
