import NIOCore
import SeedSyncModel
import SeedSyncStore

/// Assembles change sets from the rows of `seedsync._changes`, as `/v1/sync` serves them in one
/// schema version: types in that version's order, ids sorted by key, every created or updated
/// row with all the version's fields and its `revision`. A logged row holds the table's columns
/// of the moment it was written (`to_json`); ``VersionProjection`` reads them in the version asked
/// for, whatever version they were written in.
struct ChangeLogReader {
    let projection: VersionProjection
    let served: ServedPostgresTables
    let tableSchema: String
    /// The state's `min_revision` in the snapshot the rows come from.
    private(set) var minRevision: Int64 = 0
    /// Logged rows by revision, then type.
    private var rows: [Int64: [String: [LoggedRow]]] = [:]

    init(projection: VersionProjection, served: ServedPostgresTables, tableSchema: String) {
        self.projection = projection
        self.served = served
        self.tableSchema = tableSchema
    }

    private struct LoggedRow {
        var key: JSONValue
        var op: String
        var attributes: [String: JSONValue]
        /// The scope value the row left: `TypeChanges.from`.
        var from: JSONValue?
    }

    /// Adds one result row: the state's revisions, then a logged row unless the log had none.
    mutating func add(
        _ row: (Int64, Int64, Int64?, String?, String?, String?, ByteBuffer?, String?)
    ) throws(SyncStoreError) {
        minRevision = row.1
        guard let logged = row.2, let typeName = row.3, let keyText = row.4, let op = row.5 else { return }
        guard let table = served.tables[typeName] else {
            throw .schemaMismatch("the change log names a type \(typeName) the schema lacks")
        }
        // Types the version asked for does not have are left out of its change sets.
        guard projection.target.schema.type(named: typeName) != nil else { return }
        var key = wireKey(keyText, of: table.type.primaryKey.type)
        var attributes: [String: JSONValue] = [:]
        var from = try scopeBefore(row.7, of: table.type, logged: logged, row: keyText)
        if op != "d" {
            guard let data = row.6 else {
                throw .schemaMismatch("the change log holds no row for \(typeName)[\(keyText)] at revision \(logged)")
            }
            let name = "\(tableSchema).\(typeName)"
            let fieldTypes = served.memberTypes[typeName] ?? [:]
            let read = try data.withUnsafeReadableBytes { bytes throws(SyncStoreError) in
                try WireRow.members(json: bytes, key: table.type.primaryKey, fieldTypes: fieldTypes, table: name)
            }
            key = read.key
            // An updated row names where it was only when it left that scope value.
            if op != "u" || from == table.type.scopeValue(key: key, attributes: read.attributes) { from = nil }
            attributes = try projection.project(read.attributes, of: typeName, writtenIn: logged, row: keyText)
            attributes[SchemaNames.revisionColumn] = .int(logged)
        }
        rows[logged, default: [:]][typeName, default: []].append(
            LoggedRow(key: key, op: op, attributes: attributes, from: from))
    }

    /// The logged scope value a row had before its revision (as text), in the scope's type.
    private func scopeBefore(_ text: String?, of type: EntityType, logged: Int64, row: String) throws(SyncStoreError)
        -> JSONValue?
    {
        // A type scoped by its key never changes scope: its key says where a deleted row was.
        guard let text, let scope = projection.target.schema.scope, type.scopedBy != type.primaryKey.name else {
            return nil
        }
        switch scope.type {
        case .text: return .string(text)
        case .integer:
            if let value = Int64(text) { return .int(value) }
            throw .schemaMismatch(
                "the change log holds a scope value that is not \(scope.type.rawValue) for \(type.name)[\(row)] at revision \(logged)"
            )
        }
    }

    /// The change sets of revisions `after + 1` through `last`; a revision without logged rows
    /// (a row created and deleted again in one transaction) is an empty change set.
    func changeSets(after: Int64, through last: Int64) -> [EncodedChangeSet] {
        guard after < last else { return [] }
        return (after + 1...last).map { revision in
            EncodedChangeSet(revision: revision, json: changeSet(at: revision).jsonBytes())
        }
    }

    /// The change sets of `revisions` (a scoped read's, each of which logged rows).
    func changeSets(at revisions: [Int64]) -> [EncodedChangeSet] {
        revisions.map { EncodedChangeSet(revision: $0, json: changeSet(at: $0).jsonBytes()) }
    }

    private func changeSet(at revision: Int64) -> ChangeSet {
        let logged = rows[revision] ?? [:]
        let changes = projection.target.schema.types.compactMap { type -> TypeChanges? in
            guard let rows = logged[type.name] else { return nil }
            var changes = TypeChanges(type: type.name)
            for row in rows {
                switch row.op {
                case "c": changes.create.append(row.key)
                case "u": changes.update.append(row.key)
                default: changes.delete.append(row.key)
                }
                if row.op != "d" { changes.attributes[row.key.keyString!] = row.attributes }
                if let from = row.from { changes.from[row.key.keyString!] = from }
            }
            return changes
        }
        return ChangeSet(revision: revision, changes: changes).canonical(in: projection.target.schema)
    }
}
