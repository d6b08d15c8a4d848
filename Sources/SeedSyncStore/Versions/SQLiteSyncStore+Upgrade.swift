import GRDB
public import SeedSyncModel
import SeedSyncSQL

extension SQLiteSyncStore {
    /// Makes `schema` the newest version at the current revision (see
    /// `MaintainedSyncStore/upgrade(to:renaming:)`), in one transaction: the tables take the new
    /// shape (`SchemaAlteration`) and the version is recorded. Readers go on meanwhile (WAL) and
    /// see the old shape or the new, never a mix; writers wait for the transaction.
    public func upgrade(to schema: DatasetSchema, renaming renames: [FieldRename] = []) async throws -> SchemaUpgrade {
        let upgrade = try await pool.barrierWriteWithoutTransaction { db in
            // Checked outside a transaction; made again inside it, under the write lock.
            let history = try SchemaRecords.history(db)
            let planned = try history.upgrading(to: schema, renaming: renames, at: history.newest.revision)
            let rebuilding = SchemaAlteration.rebuilds(planned.changes, from: history.newest.schema)
            return try SchemaAlteration.alter(db, rebuilding: rebuilding) { db in
                let state = try LogState.fetch(db)
                let history = try SchemaRecords.history(db)
                let made = try history.upgrading(to: schema, renaming: renames, at: state.revision)
                guard SchemaAlteration.rebuilds(made.changes, from: history.newest.schema) == rebuilding else {
                    throw StoreError.invalidLoad("the schema changed while the upgrade started; run it again")
                }
                try SchemaAlteration.apply(
                    made.changes, from: history.newest.schema, to: schema, withoutRowID: false, in: db)
                try SchemaRecords.insert(made.version, in: db)
                return made
            }
        }
        _ = try await schemaHistory()
        return upgrade
    }
}
