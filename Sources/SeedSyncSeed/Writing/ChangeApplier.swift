package import GRDB
package import SeedSyncModel
import SeedSyncSQL

/// Applies `/v1/sync` change sets to the tables of a seed-format database.
///
/// Shared by `seed-build` (catch-up) and the importer, so both reach the same state from the same
/// change sets. Each change set must carry the revision after the stored one; it is validated
/// against the schema before anything is written (names from the wire reach SQL only as table
/// names that matched the schema, values are bound). Creates and updates are upserts, the server
/// wins; deletes remove the row when it is there. The stored revision moves in the same
/// transaction, so a change set is applied exactly once.
package struct ChangeApplier: Sendable {
    let schema: DatasetSchema
    let tables: [String: TableSQL]

    package init(schema: DatasetSchema) {
        self.schema = schema
        tables = Dictionary(uniqueKeysWithValues: schema.types.map { ($0.name, TableSQL(type: $0)) })
    }

    /// Applies `changeSets` in order inside the current transaction of `db`; after each one,
    /// stops early when `stopsEarly()` says so (a sync engine's edit session is waiting for the
    /// transaction: each change set leaves the rows consistent).
    ///
    /// - Returns: what each applied change set did, in order: all of them unless it stopped early.
    /// - Throws: ``SeedError`` for a change set out of order or one that does not fit the schema;
    ///   the caller's transaction must then roll back.
    @discardableResult
    package func apply(_ changeSets: [ChangeSet], in db: Database, stopsEarly: () -> Bool = { false }) throws
        -> [AppliedChangeSet]
    {
        var revision = try SeedMetadata.storedRevision(db)
        var applied: [AppliedChangeSet] = []
        for changeSet in changeSets {
            if !applied.isEmpty, stopsEarly() { break }
            guard let next = changeSet.revision, revision < .max, next == revision + 1 else {
                throw SeedError.invalidData(
                    "change set \(changeSet.revision.map(String.init) ?? "without a revision") does not follow revision \(revision)"
                )
            }
            applied.append(try apply(changeSet, revision: next, in: db))
            revision = next
        }
        try SeedMetadata.save(revision: revision, in: db)
        return applied
    }

    private func apply(_ changeSet: ChangeSet, revision: Int64, in db: Database) throws -> AppliedChangeSet {
        var applied = AppliedChangeSet(revision: revision, types: [:])
        guard !changeSet.changes.isEmpty else { return applied }
        let changes: [ValidatedChanges]
        do {
            changes = try schema.validate(changeSet)
        } catch {
            throw SeedError.invalidData("change set \(revision) does not fit the schema: \(error)")
        }
        for change in changes {
            let table = tables[change.type.name]!
            let upsert = try db.cachedStatement(sql: table.upsert)
            for row in change.creates + change.updates {
                try StatementValues.execute(upsert, row: row, of: change.type, revision: revision)
            }
            let delete = try db.cachedStatement(sql: table.delete)
            for key in change.deletes {
                try delete.execute(arguments: [ValueMapping.databaseValue(key: key)])
            }
            applied.types[change.type.name] = AppliedChangeSet.Keys(
                created: change.creates.map(\.key), updated: change.updates.map(\.key), deleted: change.deletes
            )
        }
        return applied
    }
}
