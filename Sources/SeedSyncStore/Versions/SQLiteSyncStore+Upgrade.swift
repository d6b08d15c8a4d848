import GRDB
public import SeedSyncModel
import SeedSyncSQL

extension SQLiteSyncStore {
    /// Makes `schema` the newest version at the current revision (see
    /// `MaintainedSyncStore/upgrade(to:renaming:)`), in one transaction: new types get their
    /// tables, renamed fields `RENAME COLUMN`, new fields `ADD COLUMN` (existing rows take the
    /// default), dropped fields `DROP COLUMN`; a dropped reference, which SQLite cannot drop in
    /// place, rebuilds its table. Readers go on meanwhile (WAL) and see the old shape or the new,
    /// never a mix; writers wait for the transaction.
    public func upgrade(to schema: DatasetSchema, renaming renames: [FieldRename] = []) async throws -> SchemaUpgrade {
        let upgrade = try await pool.barrierWriteWithoutTransaction { db in
            // SQLite's procedure for changing a table: foreign keys off outside the transaction,
            // checked before it commits.
            try db.execute(sql: "PRAGMA foreign_keys = OFF")
            defer { try? db.execute(sql: "PRAGMA foreign_keys = ON") }
            var upgrade: SchemaUpgrade?
            try db.inTransaction {
                let state = try StateRecord.fetch(db)
                let history = try SchemaRecords.history(db)
                let made = try history.upgrading(to: schema, renaming: renames, at: state.revision)
                try Self.alter(db, from: history.newest.schema, by: made)
                try SchemaRecords.insert(made.version, in: db)
                if let broken = try Row.fetchOne(db, sql: "PRAGMA foreign_key_check") {
                    throw StoreError.invalidLoad("the upgrade leaves a broken reference in \(broken[0] as String)")
                }
                upgrade = made
                return .commit
            }
            return upgrade!
        }
        _ = try await schemaHistory()
        return upgrade
    }

    /// The tables' DDL for `upgrade`, in order: new tables, then per type renames, additions and drops.
    private static func alter(_ db: Database, from old: DatasetSchema, by upgrade: SchemaUpgrade) throws {
        let new = upgrade.version.schema
        var rebuilt = Set<String>()
        for change in upgrade.changes {
            switch change {
            case .typeAdded(let name):
                for statement in TableSQL(type: new.type(named: name)!).create { try db.execute(sql: statement) }
            case .fieldRenamed(let type, let from, let to):
                try db.execute(sql: "ALTER TABLE \(quote(type)) RENAME COLUMN \(quote(from)) TO \(quote(to))")
            case .fieldAdded(let type, let field):
                let table = TableSQL(type: new.type(named: type)!)
                for statement in table.addColumn(table.type.field(named: field)!) { try db.execute(sql: statement) }
            case .fieldDropped(let type, let field):
                if old.type(named: type)!.field(named: field)!.references != nil {
                    rebuilt.insert(type)
                } else {
                    try db.execute(sql: "ALTER TABLE \(quote(type)) DROP COLUMN \(quote(field))")
                }
            default:
                continue
            }
        }
        for type in rebuilt { try rebuild(new.type(named: type)!, in: db) }
    }

    /// Builds `type`'s table anew in its new shape and moves the rows over: the way SQLite drops a
    /// column a foreign key names. Every column the new shape has exists already (renames and
    /// additions came first).
    private static func rebuild(_ type: EntityType, in db: Database) throws {
        let table = TableSQL(type: type)
        var building = type
        building.name = "_seedsync_rebuild"
        try db.execute(sql: TableSQL(type: building).createTable(withoutRowID: false))
        try db.execute(
            sql: "INSERT INTO \(quote(building.name)) (\(table.columns)) SELECT \(table.columns) FROM \(table.table)")
        try db.execute(sql: "DROP TABLE \(table.table)")
        try db.execute(sql: "ALTER TABLE \(quote(building.name)) RENAME TO \(table.table)")
        for statement in table.createIndexes { try db.execute(sql: statement) }
    }
}
