/// A pushed change set that fits the schema: what a store needs to apply it (see
/// ``DatasetSchema/validatePush(_:)``).
package struct ValidatedPush: Sendable {
    package let id: String
    /// The changes per type, in the pushed order; created rows of integer-keyed types still carry
    /// their temporary keys, and references to them too.
    package let changes: [ValidatedChanges]
    /// The revision the client based each updated or deleted row on: by type, then key string.
    package let baseRevisions: [String: [String: Int64]]

    /// The temporary keys of the rows each integer-keyed type creates, in pushed order.
    package var temporaryKeys: [String: [Int64]] {
        var keys: [String: [Int64]] = [:]
        for change in changes where change.type.primaryKey.type == .integer && !change.creates.isEmpty {
            keys[change.type.name] = change.creates.compactMap { if case .int(let key) = $0.key { key } else { nil } }
        }
        return keys
    }

    /// Every existing row the change set names, by type: updated and deleted rows, and created rows
    /// of text-keyed types (whose keys the client chose). A conflict answers with their state.
    package var touchedKeys: [String: [JSONValue]] {
        var keys: [String: [JSONValue]] = [:]
        for change in changes {
            let created = change.type.primaryKey.type == .text ? change.creates.map(\.key) : []
            keys[change.type.name, default: []] += created + change.updates.map(\.key) + change.deletes
        }
        return keys
    }

    /// The changes with every temporary key replaced by its real one (`keys`: by type, temporary
    /// to real), in created rows and in references: ready to write like any change set.
    package func resolved(with keys: [String: [Int64: Int64]]) -> [ValidatedChanges] {
        changes.map { change in
            let fields = change.type.fields
            func resolve(_ row: RowValues, ownKey: Bool) -> RowValues {
                var row = row
                if ownKey, case .int(let temporary) = row.key, let real = keys[change.type.name]?[temporary] {
                    row.key = .int(real)
                }
                for (index, field) in fields.enumerated() {
                    guard let target = field.references, case .int(let temporary) = row.values[index], temporary < 0,
                        let real = keys[target]?[temporary]
                    else { continue }
                    row.values[index] = .int(real)
                }
                return row
            }
            return ValidatedChanges(
                type: change.type,
                creates: change.creates.map { resolve($0, ownKey: true) },
                updates: change.updates.map { resolve($0, ownKey: false) },
                deletes: change.deletes
            )
        }
    }

    /// Whether the push itself broke the reference (`keys`: the real keys it was given): it
    /// deletes the missing target, or it creates or updates the row that still references a row
    /// it deletes. Such a change set is rejected; a reference someone else broke is a conflict.
    package func causes(_ problem: ReferenceProblem, keys: [String: [Int64: Int64]]) -> Bool {
        func writes(_ type: String, _ key: JSONValue) -> Bool {
            guard let change = changes.first(where: { $0.type.name == type }) else { return false }
            let created = change.creates.map { row -> JSONValue in
                if case .int(let temporary) = row.key, let real = keys[type]?[temporary] { return .int(real) }
                return row.key
            }
            return created.contains(key) || change.updates.contains { $0.key == key }
        }
        switch problem {
        case .dangling(_, _, _, let target, let targetKey):
            return changes.first { $0.type.name == target }?.deletes.contains(targetKey) ?? false
        case .referenced(_, _, let referrer, let referrerKey, _):
            return writes(referrer, referrerKey)
        case .crossScope:
            // Only the rows a push writes are checked, and either end of the reference is one.
            return true
        }
    }

    /// The key map of an `applied` result: by type, each temporary key (as a string) to its real key.
    package static func keyMap(_ keys: [String: [Int64: Int64]]) -> [String: [String: JSONValue]] {
        keys.filter { !$0.value.isEmpty }.mapValues { map in
            Dictionary(uniqueKeysWithValues: map.map { (String($0.key), JSONValue.int($0.value)) })
        }
    }
}

extension DatasetSchema {
    /// Checks a pushed change set: everything ``validate(_:)`` checks, and the rules of pushes.
    ///
    /// - Every listed type has at least one row to create, update or delete.
    /// - Every updated or deleted row carries `revision` (a non-negative integer) in its
    ///   attributes; a deleted row's attributes are that alone.
    /// - Created rows of integer-keyed types have negative (temporary) keys, which updates and
    ///   deletes may not name; a negative reference must be a temporary key this change set creates.
    ///   Each problem has its own message.
    ///
    /// ```swift
    /// let push = try schema.validatePush(pushed)
    /// ```
    ///
    /// - Throws: ``ChangeSetError`` naming the first problem.
    package func validatePush(_ pushed: PushedChangeSet) throws(ChangeSetError) -> ValidatedPush {
        var plain = pushed.changeSet
        var bases: [String: [String: Int64]] = [:]
        for index in plain.changes.indices {
            let changes = plain.changes[index]
            for id in changes.update + changes.delete {
                guard let key = id.keyString else { continue }  // `validate` names it
                bases[changes.type, default: [:]][key] = try baseRevision(of: id, in: changes)
            }
            for id in changes.delete {
                guard let key = id.keyString else { continue }
                guard changes.attributes[key]?.count == 1 else {
                    throw ChangeSetError(
                        .malformed,
                        "\(changes.type)[\(key.clippedForMessage)] is deleted: its attributes hold its revision alone")
                }
                plain.changes[index].attributes[key] = nil
            }
        }
        let changes = try validate(plain)
        try Self.refuseNUL(in: changes)
        if let empty = changes.first(where: { $0.creates.isEmpty && $0.updates.isEmpty && $0.deletes.isEmpty }) {
            throw ChangeSetError(
                .malformed,
                "\(empty.type.name) is listed in types but the change set creates, updates and deletes none of its rows"
            )
        }
        var temporary: [String: Set<Int64>] = [:]
        for change in changes where change.type.primaryKey.type == .integer {
            for row in change.creates {
                guard case .int(let key) = row.key, key < 0 else {
                    throw ChangeSetError(
                        .invalidKey,
                        "\(change.type.name)[\(row.key.keyString ?? "?")] is created with a key of its own: new rows of \(change.type.name) take a negative temporary key, and the server assigns the real one"
                    )
                }
                temporary[change.type.name, default: []].insert(key)
            }
        }
        for change in changes {
            for (index, field) in change.type.fields.enumerated() {
                guard let target = field.references else { continue }
                for row in change.creates + change.updates {
                    guard case .int(let key) = row.values[index], key < 0, !(temporary[target]?.contains(key) ?? false)
                    else { continue }
                    throw ChangeSetError(
                        .brokenReference,
                        "\(change.type.name)[\(row.key.keyString ?? "?")].\(field.name) references \(target)[\(key)], a temporary key this change set does not create"
                    )
                }
            }
        }
        return ValidatedPush(id: pushed.id, changes: changes, baseRevisions: bases)
    }

    /// The revision an update or delete of `key` was based on, from its attributes.
    ///
    /// - Throws: ``ChangeSetError`` saying which is wrong: a temporary key (an integer-keyed type's
    ///   negative key), no `revision`, or a `revision` that is not a whole number of 0 or more.
    private func baseRevision(of key: JSONValue, in changes: TypeChanges) throws(ChangeSetError) -> Int64 {
        let name = "\(changes.type)[\(key.keyString!.clippedForMessage)]"
        if case .int(let number) = key, number < 0, type(named: changes.type)?.primaryKey.type == .integer {
            throw ChangeSetError(
                .invalidKey,
                "\(name) is a temporary key: only a row this change set creates can have one; name the row by the key the server gave it"
            )
        }
        switch changes.attributes[key.keyString!]?[SchemaNames.revisionColumn] {
        case nil:
            throw ChangeSetError(
                .malformed, "\(name) needs the revision it was based on: \"revision\" in its attributes")
        case .int(let revision) where revision >= 0:
            return revision
        case .int(let revision):
            throw ChangeSetError(
                .malformed, "\(name): revision \(revision) is not a revision; revisions are whole numbers of 0 or more")
        default:
            throw ChangeSetError(
                .malformed, "\(name): \"revision\" must be the row's revision, a whole number of 0 or more")
        }
    }
}

/// A reference a written change set leaves broken, found by a store after writing its rows.
/// Both stores describe them alike; a commit is refused with ``error``, a push answered with a
/// conflict.
package enum ReferenceProblem: Sendable, Hashable {
    /// `type[key].field` holds `targetKey`, and `target` has no such row.
    case dangling(type: String, key: JSONValue, field: String, target: String, targetKey: JSONValue)
    /// `type[key]` is deleted, but `referrer[referrerKey].field` still references it.
    case referenced(type: String, key: JSONValue, referrer: String, referrerKey: JSONValue, field: String)
    /// `type[key].field` holds `targetKey`, a row of another scope value than its own.
    case crossScope(type: String, key: JSONValue, field: String, target: String, targetKey: JSONValue)

    package var error: ChangeSetError {
        switch self {
        case .dangling(let type, let key, let field, let target, let targetKey):
            ChangeSetError(
                .brokenReference,
                "\(type)[\(key.keyString ?? "?")].\(field) references \(target)[\(targetKey.keyString ?? "?")], which does not exist"
            )
        case .referenced(let type, let key, let referrer, let referrerKey, let field):
            ChangeSetError(
                .brokenReference,
                "\(type)[\(key.keyString ?? "?")] cannot be deleted: \(referrer)[\(referrerKey.keyString ?? "?")].\(field) references it"
            )
        case .crossScope(let type, let key, let field, let target, let targetKey):
            ChangeSetError(
                .brokenReference,
                "\(type)[\(key.keyString ?? "?")].\(field) references \(target)[\(targetKey.keyString ?? "?")], a row of another scope value: a reference between scoped rows stays inside one scope value"
            )
        }
    }

    /// The rows a conflict answer shows besides the ones the change set names: the missing
    /// target, or the row that still references the kept one.
    package var relatedRow: (type: String, key: JSONValue) {
        switch self {
        case .dangling(_, _, _, let target, let targetKey): (target, targetKey)
        case .referenced(_, _, let referrer, let referrerKey, _): (referrer, referrerKey)
        case .crossScope(_, _, _, let target, let targetKey): (target, targetKey)
        }
    }
}

/// The current state of rows, as a conflict answer shows it: existing rows in `update` with all
/// their fields and revision, missing ones in `delete`.
package struct ConflictRows: Sendable {
    private var rows: [String: [String: (key: JSONValue, row: (values: [JSONValue], revision: Int64)?)]] = [:]

    package init() {}

    /// Records the state of `type[key]`: its field values and revision, or `nil` when it is gone.
    package mutating func add(_ type: String, _ key: JSONValue, _ row: (values: [JSONValue], revision: Int64)?) {
        guard let string = key.keyString else { return }
        rows[type, default: [:]][string] = (key, row)
    }

    /// The conflict change set, in canonical order.
    package func changeSet(in schema: DatasetSchema) -> ChangeSet {
        let changes = schema.types.compactMap { type -> TypeChanges? in
            guard let rows = rows[type.name], !rows.isEmpty else { return nil }
            var changes = TypeChanges(type: type.name)
            for (string, entry) in rows {
                guard let row = entry.row else {
                    changes.delete.append(entry.key)
                    continue
                }
                changes.update.append(entry.key)
                var attributes = Dictionary(uniqueKeysWithValues: zip(type.fields.map(\.name), row.values))
                attributes[SchemaNames.revisionColumn] = .int(row.revision)
                changes.attributes[string] = attributes
            }
            return changes
        }
        return ChangeSet(changes: changes, conflict: true).canonical(in: schema)
    }
}

extension ChangeSetError {
    /// No integer key is left for a created row of `type`: keys are never reused, and the
    /// largest one used is too close to the largest 64-bit integer (or the key's sequence's maximum).
    package static func keysExhausted(_ type: String) -> Self {
        ChangeSetError(
            .keysExhausted,
            "\(type) has no integer keys left for new rows: keys are never reused, and the largest one used is at the end of the 64-bit range"
        )
    }
}
