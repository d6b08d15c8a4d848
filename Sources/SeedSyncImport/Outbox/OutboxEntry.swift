import Foundation
import SeedSyncModel

/// A row of an entity type: the type's name and the key's string form (see ``JSONValue/keyString``).
struct RowID: Hashable, Sendable, Comparable {
    var type: String
    var key: String

    static func < (a: RowID, b: RowID) -> Bool { (a.type, a.key) < (b.type, b.key) }
}

/// One local change set waiting to be pushed: a row of `_seedsync_outbox`.
///
/// Its change set is in the push shape (PROTOCOL.md §5): created rows with all their fields
/// (integer keys temporary and negative), updated rows with all their fields and `revision`, the
/// revision the edit was based on, deleted rows with `revision` alone.
struct OutboxEntry: Sendable {
    var position: Int64
    var id: String
    var changeSet: ChangeSet

    /// What this entry makes of `row`: its attributes (fields and `revision`) when it creates or
    /// updates it, `.some(nil)` when it deletes it, `nil` when it does not touch it.
    func version(of row: RowID) -> [String: JSONValue]?? {
        guard let changes = changeSet[row.type] else { return nil }
        if changes.delete.contains(where: { $0.keyString == row.key }) { return .some(nil) }
        guard let attributes = changes.attributes[row.key] else { return nil }
        return .some(attributes)
    }

    /// Whether this entry creates `row`.
    func creates(_ row: RowID) -> Bool {
        changeSet[row.type]?.create.contains { $0.keyString == row.key } ?? false
    }

    /// Every row the entry creates, updates or deletes.
    var touchedRows: [RowID] {
        changeSet.changes.flatMap { changes in
            (changes.create + changes.update + changes.delete).compactMap { key in
                key.keyString.map { RowID(type: changes.type, key: $0) }
            }
        }
    }

    /// Rows the entry creates or updates, each with the revision its edit was based on (0 for a
    /// created row).
    var writtenRows: [(row: RowID, base: Int64)] {
        changeSet.changes.flatMap { changes in
            (changes.create + changes.update).compactMap { key -> (RowID, Int64)? in
                guard let string = key.keyString else { return nil }
                let base = changes.attributes[string]?[SchemaNames.revisionColumn]?.intValue ?? 0
                return (RowID(type: changes.type, key: string), base)
            }
        }
    }

    /// The rows the entry's fields reference, by the schema's reference fields.
    func referencedRows(in schema: DatasetSchema) -> Set<RowID> {
        var rows = Set<RowID>()
        for changes in changeSet.changes {
            guard let type = schema.type(named: changes.type) else { continue }
            for field in type.fields {
                guard let target = field.references else { continue }
                for attributes in changes.attributes.values {
                    if let key = attributes[field.name]?.keyString { rows.insert(RowID(type: target, key: key)) }
                }
            }
        }
        return rows
    }

    /// The pushed form: the entry's id and change set.
    var pushed: PushedChangeSet { PushedChangeSet(id: id, changeSet: changeSet) }
}

extension ChangeSet {
    /// This change set with every temporary key replaced by its real one (`keys`: by type,
    /// temporary to real): in the key lists, the attribute keys and the reference fields; `nil`
    /// when it names none of them.
    func remapping(_ keys: [String: [Int64: Int64]], in schema: DatasetSchema) -> ChangeSet? {
        guard mentions(keys, in: schema) else { return nil }
        var remapped = self
        var changed = false
        for index in remapped.changes.indices {
            let type = remapped.changes[index].type
            let own = keys[type] ?? [:]
            let references =
                schema.type(named: type)?.fields.compactMap { field in
                    field.references.flatMap { keys[$0] }.map { (field.name, $0) }
                } ?? []
            guard !own.isEmpty || !references.isEmpty else { continue }
            var changes = remapped.changes[index]
            func map(_ key: JSONValue) -> JSONValue {
                guard let number = key.intValue, let real = own[number] else { return key }
                changed = true
                return .int(real)
            }
            changes.create = changes.create.map(map)
            changes.update = changes.update.map(map)
            changes.delete = changes.delete.map(map)
            var attributes: [String: [String: JSONValue]] = [:]
            for (key, fields) in changes.attributes {
                var fields = fields
                for (name, map) in references {
                    guard let number = fields[name]?.intValue, let real = map[number] else { continue }
                    fields[name] = .int(real)
                    changed = true
                }
                attributes[Int64(key).flatMap { own[$0] }.map(String.init) ?? key] = fields
            }
            changes.attributes = attributes
            remapped.changes[index] = changes
        }
        return changed ? remapped : nil
    }

    /// Whether a key list or a reference field names one of `keys` (by type).
    private func mentions(_ keys: [String: [Int64: Int64]], in schema: DatasetSchema) -> Bool {
        func named(_ list: [JSONValue], _ map: [Int64: Int64]) -> Bool {
            list.contains { $0.intValue.map { map[$0] != nil } ?? false }
        }
        for changes in changes {
            if let own = keys[changes.type],
                named(changes.create, own) || named(changes.update, own) || named(changes.delete, own)
            {
                return true
            }
            guard let type = schema.type(named: changes.type) else { continue }
            for field in type.fields {
                guard let target = field.references, let map = keys[target] else { continue }
                if changes.attributes.values.contains(where: {
                    $0[field.name]?.intValue.map { map[$0] != nil } ?? false
                }) {
                    return true
                }
            }
        }
        return false
    }

    /// This change set with the base revision of each row in `bases` moved from the old to the
    /// new value, where it still holds the old one; `nil` when none does.
    func rebasing(_ bases: [RowID: (old: Int64, new: Int64)]) -> ChangeSet? {
        var rebased = self
        var changed = false
        for index in rebased.changes.indices {
            let changes = rebased.changes[index]
            for key in changes.update + changes.delete {
                guard let string = key.keyString, let base = bases[RowID(type: changes.type, key: string)],
                    changes.attributes[string]?[SchemaNames.revisionColumn]?.intValue == base.old
                else { continue }
                rebased.changes[index].attributes[string]?[SchemaNames.revisionColumn] = .int(base.new)
                changed = true
            }
        }
        return changed ? rebased : nil
    }

    /// This change set without `__oldId__` in its attributes: the server marks the rows this
    /// client created with it, and the key map has already told the client which became which.
    func removingOldIDs() -> ChangeSet {
        var plain = self
        for index in plain.changes.indices
        where plain.changes[index].attributes.values.contains(where: { $0[SchemaNames.oldIDAttribute] != nil }) {
            for key in plain.changes[index].attributes.keys {
                plain.changes[index].attributes[key]?[SchemaNames.oldIDAttribute] = nil
            }
        }
        return plain
    }
}
