import Foundation
import GRDB
import SeedSyncModel
import SeedSyncSQL
import SeedSyncSeed

extension LocalDatabase {
    /// Moves the database from schema `old` to `new` in one transaction, from what `staging`
    /// holds, and returns it reopened with what the staged change sets did:
    ///
    /// 1. the tables take the new shape (`SchemaAlteration`: new tables, renamed, added and
    ///    dropped columns; rows take the new columns' defaults);
    /// 2. the new types' rows are copied in, and the new columns take the server's values (the
    ///    downloaded ones, or the one value a uniform field holds in every row);
    /// 3. the pending local change sets and their shadows are rewritten for the new schema
    ///    (``Outbox/migrate(_:server:in:)``);
    /// 4. the staged change sets, in the new version, are applied from the database's revision on
    ///    (rows the column download read at a later revision are overwritten with what they were,
    ///    then brought forward again), with the local edits kept as a sync keeps them;
    /// 5. the metadata takes the new schema.
    ///
    /// Readers see the old version until it commits and the new one whole after; a process killed
    /// before leaves the database as it was, never half-migrated.
    func migrated(
        from old: DatasetSchema, to new: DatasetSchema, changes: [SchemaChange], staging: MigrationStaging
    ) async throws -> (database: LocalDatabase, applied: [AppliedChangeSet], events: [ImportEvent]) {
        let path = self.path
        let staged = staging.types
        let uniform = staging.uniform
        let outcome: ([AppliedChangeSet], [ImportEvent])
        do {
            outcome = try await staging.attached(to: writer) { db in
                let rebuilding = SchemaAlteration.rebuilds(changes, from: old)
                return try SchemaAlteration.alter(db, rebuilding: rebuilding) { db in
                    try SchemaAlteration.apply(changes, from: old, to: new, withoutRowID: true, in: db)
                    for type in staged.values { try Self.copy(type, isNew: old.type(named: type.name) == nil, db) }
                    for (name, values) in uniform {
                        if let type = new.type(named: name) { try Self.fill(type, with: values, db) }
                    }
                    try Outbox(schema: new).migrate(
                        changes,
                        server: { type, key in
                            try Self.stagedRow(of: type, key: key, staged: staged, uniform: uniform[type.name], db)
                        }, in: db)
                    let applier = ChangeApplier(schema: new)
                    let applied = try applier.apply(MigrationStaging.changeSets(in: db, checkedBy: applier), in: db)
                    let events = try PendingChanges(schema: new).absorb(applied, in: db)
                    try SeedMetadata.save(schema: new, in: db)
                    return (applied, events)
                }
            }
        } catch let error as ImportError {
            throw error
        } catch let error as SeedError {
            throw ImportError(.invalidChangeSet, "the migration stopped: \(error); \(path) stays at its version")
        } catch let error as DatabaseError {
            throw ImportError(
                SeedError.database(error, "migrate \(path)", file: path), otherwise: .invalidDatabase,
                "\(path) stays at its version")
        }
        if isAppDatabase { try await Self.notifyEveryTable(of: writer) }
        return (try await reopened(), outcome.0, outcome.1)
    }

    /// The staged rows of `type` into the database: a new type's rows whole, another's new
    /// columns into the rows it has (rows it does not have are the server's to send, or gone).
    private static func copy(_ type: EntityType, isNew: Bool, _ db: Database) throws {
        let table = TableSQL(type: type)
        guard !isNew else {
            try db.execute(
                sql:
                    "INSERT INTO main.\(table.table) (\(table.columns)) SELECT \(table.columns) FROM staging.\(table.table)"
            )
            return
        }
        guard !type.fields.isEmpty else { return }
        let assignments = type.fields.map { "\(quote($0.name)) = s.\(quote($0.name))" }.joined(separator: ", ")
        // Rows whose new columns already hold the server's values (their default) are not written.
        let differs = type.fields.map { "main.\(table.table).\(quote($0.name)) IS NOT s.\(quote($0.name))" }
            .joined(separator: " OR ")
        try db.execute(
            sql: """
                UPDATE main.\(table.table) SET \(assignments) FROM staging.\(table.table) AS s \
                WHERE main.\(table.table).\(table.key) = s.\(table.key) AND (\(differs))
                """)
    }

    /// Every row of `type` takes `values` (a uniform field's one value, by field name) in its new
    /// columns; rows that hold it already (the column's default) are not written.
    private static func fill(_ type: EntityType, with values: [String: JSONValue], _ db: Database) throws {
        let table = TableSQL(type: type)
        for field in type.fields {
            guard let value = values[field.name] else { continue }
            let stored = ValueMapping.databaseValue(value, as: field.type)
            try db.execute(
                sql: "UPDATE main.\(table.table) SET \(quote(field.name)) = ? WHERE \(quote(field.name)) IS NOT ?",
                arguments: [stored, stored])
        }
    }

    /// The server's new fields of `type[key]`: the staged ones, and the `uniform` ones every row
    /// holds; `nil` when there are none, or the download did not have the row.
    private static func stagedRow(
        of type: EntityType, key: String, staged: [String: EntityType], uniform: [String: JSONValue]?, _ db: Database
    ) throws -> [String: JSONValue]? {
        guard let stagedType = staged[type.name], let keyValue = type.primaryKey.type.key(from: key) else {
            return uniform
        }
        let table = TableSQL(type: stagedType)
        guard
            let row = try Row.fetchOne(
                db, sql: "SELECT \(table.columns) FROM staging.\(table.table) WHERE \(table.key) = ?",
                arguments: [ValueMapping.databaseValue(key: keyValue)])
        else { return nil }
        let values = ValueMapping.jsonRow(row, of: stagedType)
        return Dictionary(uniqueKeysWithValues: zip(stagedType.fields.map(\.name), values.dropFirst()))
            .merging(uniform ?? [:]) { downloaded, _ in downloaded }
    }
}
