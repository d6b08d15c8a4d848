import NIOCore
import SeedSyncModel

/// Assembles change sets from the rows of `seedsync._changes`, as `/v1/sync` serves them: types
/// in schema order, ids sorted by key, every created or updated row with all its fields and its
/// `revision`.
struct ChangeLogReader {
    let schema: DatasetSchema
    let tables: [String: PostgresTableSQL]
    let tableSchema: String
    /// The state's `min_revision` in the snapshot the rows come from.
    private(set) var minRevision: Int64 = 0
    /// Logged rows by revision, then type.
    private var rows: [Int64: [String: [LoggedRow]]] = [:]

    init(schema: DatasetSchema, tables: [String: PostgresTableSQL], tableSchema: String) {
        self.schema = schema
        self.tables = tables
        self.tableSchema = tableSchema
    }

    private struct LoggedRow {
        var key: JSONValue
        var op: String
        var values: [JSONValue]
    }

    /// Adds one result row: the state's revisions, then a logged row unless the log had none.
    mutating func add(_ row: (Int64, Int64, Int64?, String?, String?, String?, ByteBuffer?)) throws(SyncStoreError) {
        minRevision = row.1
        guard let logged = row.2, let typeName = row.3, let keyText = row.4, let op = row.5 else { return }
        guard let table = tables[typeName] else {
            throw .schemaMismatch("the change log names a type \(typeName) the schema lacks")
        }
        let key = wireKey(keyText, of: table.type.primaryKey.type)
        var values: [JSONValue] = []
        if op != "d" {
            guard let data = row.6 else {
                throw .schemaMismatch("the change log holds no row for \(typeName)[\(keyText)] at revision \(logged)")
            }
            let name = "\(tableSchema).\(typeName)"
            values = try data.withUnsafeReadableBytes { bytes throws(SyncStoreError) in
                try WireRow(json: bytes, of: table.type, table: name).values
            }
        }
        rows[logged, default: [:]][typeName, default: []].append(LoggedRow(key: key, op: op, values: values))
    }

    /// Fails when `requested` is outside what a log from `minRevision` to `revision` can serve.
    static func check(requested: Int64, revision: Int64, minRevision: Int64) throws(SyncStoreError) {
        if requested < minRevision { throw .historyExpired(requested: requested, minRevision: minRevision) }
        if requested > revision { throw .revisionAhead(requested: requested, revision: revision) }
    }

    /// The change sets of revisions `after + 1` through `last`; a revision without logged rows
    /// (a row created and deleted again in one transaction) is an empty change set.
    func changeSets(after: Int64, through last: Int64) -> [EncodedChangeSet] {
        guard after < last else { return [] }
        return (after + 1...last).map { revision in
            EncodedChangeSet(revision: revision, json: changeSet(at: revision).jsonBytes())
        }
    }

    private func changeSet(at revision: Int64) -> ChangeSet {
        let logged = rows[revision] ?? [:]
        let changes = schema.types.compactMap { type -> TypeChanges? in
            guard let rows = logged[type.name] else { return nil }
            var changes = TypeChanges(type: type.name)
            for row in rows {
                switch row.op {
                case "c": changes.create.append(row.key)
                case "u": changes.update.append(row.key)
                default: changes.delete.append(row.key)
                }
                guard row.op != "d" else { continue }
                var attributes = [String: JSONValue](minimumCapacity: type.fields.count + 1)
                for (field, value) in zip(type.fields, row.values.dropFirst()) { attributes[field.name] = value }
                attributes[SchemaNames.revisionColumn] = .int(revision)
                changes.attributes[row.key.keyString!] = attributes
            }
            return changes
        }
        return ChangeSet(revision: revision, changes: changes).canonical(in: schema)
    }
}
