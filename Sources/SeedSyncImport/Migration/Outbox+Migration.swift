import GRDB
import SeedSyncModel
import SeedSyncSQL

extension Outbox {
    /// Rewrites the pending change sets and the shadows for this outbox's schema, the one a
    /// migration moves the database to, inside its transaction (after the tables took the new
    /// shape and the new columns their values): renamed fields under their new names, dropped ones
    /// left out, and new ones given the server's value (what the edits, made before the field
    /// existed, leave as it was). A shadow takes it from `server`, the staged column download; an
    /// edited row takes it from the row (or its shadow, when the row is gone), and a row created
    /// here, which the server does not have, the field's default.
    ///
    /// - Parameters:
    ///   - changes: the migration's changes (`SchemaHistory/migration(from:to:renames:)`).
    ///   - server: the server's values of a row's new fields, by type and key, or `nil` when the
    ///     server did not have the row.
    func migrate(
        _ changes: [SchemaChange], server: (EntityType, String) throws -> [String: JSONValue]?, in db: Database
    ) throws {
        guard try Self.exists(in: db) else { return }
        let rewrite = FieldRewrite(changes, schema: schema)
        for row in try shadowedRows(in: db) {
            guard case .some(.some(let attributes)) = try shadow(of: row, in: db) else { continue }
            let type = try type(row.type)
            let values = try server(type, row.key)
            try setShadow(of: row, to: rewrite.apply(attributes, of: type) { values?[$0.name] }, in: db)
        }
        for var entry in try entries(in: db) {
            for index in entry.changeSet.changes.indices {
                let changes = entry.changeSet.changes[index]
                let type = try type(changes.type)
                let deleted = Set(changes.delete.compactMap(\.keyString))
                for (key, attributes) in changes.attributes where !deleted.contains(key) {
                    let row = RowID(type: type.name, key: key)
                    let current = try localRow(row, in: db) ?? (try shadow(of: row, in: db) ?? nil)
                    entry.changeSet.changes[index].attributes[key] = rewrite.apply(attributes, of: type) {
                        current?[$0.name]
                    }
                }
            }
            try save(entry, in: db)
        }
    }
}

/// The renames, drops and additions of a migration, per type, applied to a row's attributes.
private struct FieldRewrite {
    var renamed: [String: [String: String]] = [:]
    var dropped: [String: Set<String>] = [:]
    var added: [String: Set<String>] = [:]

    init(_ changes: [SchemaChange], schema: DatasetSchema) {
        for change in changes {
            switch change {
            case .fieldRenamed(let type, let from, let to): renamed[type, default: [:]][from] = to
            case .fieldDropped(let type, let field): dropped[type, default: []].insert(field)
            case .fieldAdded(let type, let field): added[type, default: []].insert(field)
            default: continue
            }
        }
    }

    /// `attributes` of a row of `type` (new schema) with its fields renamed, dropped and added; an
    /// added field takes `value(field)`, or its default (or `null`) when that has none.
    func apply(_ attributes: [String: JSONValue], of type: EntityType, value: (Field) -> JSONValue?)
        -> [String: JSONValue]
    {
        var rewritten: [String: JSONValue] = [:]
        for (name, value) in attributes where !(dropped[type.name]?.contains(name) ?? false) {
            rewritten[renamed[type.name]?[name] ?? name] = value
        }
        for field in type.fields where added[type.name]?.contains(field.name) ?? false {
            rewritten[field.name] = value(field) ?? field.absentValue
        }
        return rewritten
    }
}
