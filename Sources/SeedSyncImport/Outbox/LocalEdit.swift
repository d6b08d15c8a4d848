import SeedSyncModel

/// One change set of a list in the shape the server sends, applied through ``LocalChanges``:
/// the list's temporary keys become the database's, in keys and in reference fields.
struct LocalEdit: Sendable {
    let changeSet: ChangeSet
    /// Temporary keys of earlier change sets of the list, by type: the file's to the database's.
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
        try check(against: changes.schema)
        let created = try createRows(in: changes)
        for given in changeSet.changes {
            for key in given.update {
                let attributes = given.attributes[key.keyString ?? ""] ?? [:]
                guard attributes[SchemaNames.revisionColumn] == nil else {
                    throw ImportError(
                        .invalidChangeSet,
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

    /// What is refused before anything is written: a revision, a change set that changes
    /// nothing, a new row of an integer-keyed type with a key of its own.
    private func check(against schema: DatasetSchema) throws {
        guard changeSet.revision == nil else {
            throw ImportError(.invalidChangeSet, "leave 'revision' out: the server assigns revisions")
        }
        guard changeSet.changes.contains(where: { !($0.create.isEmpty && $0.update.isEmpty && $0.delete.isEmpty) })
        else {
            throw ImportError(.invalidChangeSet, "it creates, updates and deletes nothing")
        }
        for given in changeSet.changes where schema.type(named: given.type)?.primaryKey.type == .integer {
            if let key = given.create.first(where: { ($0.intValue ?? 0) >= 0 }) {
                throw ImportError(
                    .invalidChangeSet,
                    "\(given.type)[\(key.keyString ?? "?")] is created with a key of its own: new rows of \(given.type) take a negative temporary key"
                )
            }
        }
    }

    /// Creates the change set's new rows: those whose references all resolve first, round by
    /// round, so a row may reference a new row listed after it. Returns the database's key of
    /// each temporary key, by type.
    private func createRows(in changes: LocalChanges) throws -> [String: [Int64: JSONValue]] {
        var created: [String: [Int64: JSONValue]] = [:]
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
                throw ImportError(
                    .invalidChangeSet,
                    "the new rows \(waiting.map { "\($0.0)[\($0.1.keyString ?? "?")]" }.joined(separator: ", ")) reference each other in a circle"
                )
            }
        }
        return created
    }

    /// A key of the list as the database knows it: a temporary key this change set or an
    /// earlier one of the list created becomes the database's; any other key is the database's already.
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
        guard let entity = changes.schema.type(named: type) else {
            throw ImportError(.invalidChangeSet, "unknown type '\(type)'")
        }
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
