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
            try SchemaAlteration.alter(db) { db in
                let state = try StateRecord.fetch(db)
                let history = try SchemaRecords.history(db)
                let made = try history.upgrading(to: schema, renaming: renames, at: state.revision)
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
