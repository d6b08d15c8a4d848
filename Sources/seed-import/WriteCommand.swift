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
        // What a push could not carry is refused before anything is written (it took minutes to find out otherwise).
        for (index, changeSet) in changeSets.enumerated() {
            let size = changeSet.jsonBytes().count
            guard size <= LocalChanges.maxBytes else {
                throw CommandFailure(
                    "change set \(index + 1) of \(file) is \(size) bytes of JSON, more than the \(LocalChanges.maxBytes) one change set may be (a push carries whole change sets): split it into several; nothing was written"
                )
            }
        }
        let importer = SeedImporter(
            configuration: .init(
                seed: "", database: database, server: .init(serverURL: URL(string: "http://127.0.0.1")!, token: nil)))
        var queued: [QueuedChangeSet] = []
        var keys: [String: [Int64: JSONValue]] = [:]
        for (index, changeSet) in changeSets.enumerated() {
            let fileKeys = keys
            do {
                let result = try await importer.write { changes in
                    try LocalEdit(changeSet, fileKeys: fileKeys).apply(to: changes)
                }
                queued.append(
                    QueuedChangeSet(
                        id: result.id,
                        keys: result.keys.mapValues { map in
                            Dictionary(uniqueKeysWithValues: map.map { (String($0.key), $0.value) })
                        }))
                keys.merge(result.keys) { $0.merging($1) { $1 } }
            } catch {
                let done = index == 0 ? "nothing was queued" : "the first \(index) were queued"
                throw CommandFailure(
                    "change set \(index + 1) of \(file): \(error); it and the ones after it were not applied, \(done)")
            }
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
    struct QueuedChangeSet: Encodable {
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

/// One change set of the file, applied through ``LocalChanges``: the file's temporary keys
/// become the database's, in keys and in reference fields.
struct LocalEdit: Sendable {
    let changeSet: ChangeSet
    /// Temporary keys of earlier change sets of the file, by type: the file's to the database's.
    let fileKeys: [String: [Int64: JSONValue]]

    /// The temporary keys the change set creates, by type.
    let creating: [String: Set<Int64>]

    init(_ changeSet: ChangeSet, fileKeys: [String: [Int64: JSONValue]]) {
        self.changeSet = changeSet
        self.fileKeys = fileKeys
        creating = Dictionary(
            changeSet.changes.map { ($0.type, Set($0.create.compactMap(\.intValue))) },
            uniquingKeysWith: { $0.union($1) })
    }

    func apply(to changes: LocalChanges) throws -> (id: String, keys: [String: [Int64: JSONValue]]) {
        guard changeSet.revision == nil else {
            throw CommandFailure("leave 'revision' out: the server assigns revisions")
        }
        guard changeSet.changes.contains(where: { !($0.create.isEmpty && $0.update.isEmpty && $0.delete.isEmpty) })
        else {
            throw CommandFailure("it creates, updates and deletes nothing")
        }
        for given in changeSet.changes where changes.schema.type(named: given.type)?.primaryKey.type == .integer {
            if let key = given.create.first(where: { ($0.intValue ?? 0) >= 0 }) {
                throw CommandFailure(
                    "\(given.type)[\(key.keyString ?? "?")] is created with a key of its own: new rows of \(given.type) take a negative temporary key"
                )
            }
        }
        var created: [String: [Int64: JSONValue]] = [:]
        // Rows whose references all resolve are created first, round by round, so a row may
        // reference a new row listed after it.
        var waiting = changeSet.changes.flatMap { changes in
            changes.create.map { (changes.type, $0, changes.attributes[$0.keyString ?? ""] ?? [:]) }
        }
        while !waiting.isEmpty {
            let before = waiting.count
            waiting = try waiting.filter { type, key, attributes in
                guard var row = try resolve(attributes, of: type, created: created, in: changes) else { return true }
                if key.intValue == nil, let entity = changes.schema.type(named: type) {
                    row[entity.primaryKey.name] = key
                }
                let local = try changes.create(type, row)
                if let temporary = key.intValue { created[type, default: [:]][temporary] = local }
                return false
            }
            guard waiting.count < before else {
                throw CommandFailure(
                    "the new rows \(waiting.map { "\($0.0)[\($0.1.keyString ?? "?")]" }.joined(separator: ", ")) reference each other in a circle"
                )
            }
        }
        for given in changeSet.changes {
            for key in given.update {
                let attributes = given.attributes[key.keyString ?? ""] ?? [:]
                guard attributes[SchemaNames.revisionColumn] == nil else {
                    throw CommandFailure(
                        "\(given.type)[\(key.keyString ?? "?")]: leave 'revision' out, it is taken from the local row")
                }
                let fields = try resolve(attributes, of: given.type, created: created, in: changes) ?? attributes
                try changes.update(given.type, key: local(key, of: given.type, created: created), fields)
            }
            for key in given.delete {
                try changes.delete(given.type, key: local(key, of: given.type, created: created))
            }
        }
        return (changes.id, created)
    }

    /// A key of the file as the database knows it: a temporary key this change set or an
    /// earlier one of the file created becomes the database's; any other key is the database's already.
    private func local(_ key: JSONValue, of type: String, created: [String: [Int64: JSONValue]]) -> JSONValue {
        guard let number = key.intValue, number < 0 else { return key }
        return created[type]?[number] ?? fileKeys[type]?[number] ?? key
    }

    /// `attributes` with every temporary key in a reference field replaced by the database's,
    /// or `nil` while it names a row this change set creates and has not created yet.
    private func resolve(
        _ attributes: [String: JSONValue], of type: String, created: [String: [Int64: JSONValue]],
        in changes: LocalChanges
    ) throws -> [String: JSONValue]? {
        guard let entity = changes.schema.type(named: type) else { throw CommandFailure("unknown type '\(type)'") }
        var fields = attributes
        for field in entity.fields {
            guard let target = field.references, let key = attributes[field.name], let number = key.intValue, number < 0
            else { continue }
            if creating[target]?.contains(number) ?? false, created[target]?[number] == nil { return nil }
            fields[field.name] = local(key, of: target, created: created)
        }
        return fields
    }
}
