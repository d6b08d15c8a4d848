package import GRDB
package import SeedSyncModel

/// Moves a SQLite file's tables from one schema version to the next: the server store's upgrade
/// and the app database's migration make the same DDL.
///
/// In order: new types get their tables, renamed fields `RENAME COLUMN`, new fields `ADD COLUMN`
/// (rows that exist take the default; see ``TableSQL/addColumn(_:)``), dropped fields `DROP
/// COLUMN`. A dropped reference, which SQLite cannot drop in place (a foreign key names it),
/// rebuilds its table: SQLite's procedure, with foreign keys off for that transaction (set outside
/// it, so ``alter(_:rebuilding:_:)`` runs it all outside any transaction the caller holds) and
/// every foreign key checked before it commits. Otherwise the transaction keeps the connection's
/// deferred foreign keys, which SQLite checks at the commit as it goes (no scan of every table).
package enum SchemaAlteration {
    /// Whether `changes` from `old` rebuild a table: a dropped reference.
    package static func rebuilds(_ changes: [SchemaChange], from old: DatasetSchema) -> Bool {
        changes.contains { change in
            guard case .fieldDropped(let type, let field) = change else { return false }
            return old.type(named: type)?.field(named: field)?.references != nil
        }
    }

    /// Runs `body` in one transaction; with `rebuilding`, foreign keys off and then every one
    /// checked (see ``rebuilds(_:from:)``). A reference left broken fails the transaction, which
    /// rolls back whole.
    ///
    /// - Throws: what `body` throws; a `DatabaseError` (`SQLITE_CONSTRAINT_FOREIGNKEY` for a broken
    ///   reference), which the caller maps to its own error.
    package static func alter<T>(_ db: Database, rebuilding: Bool, _ body: (Database) throws -> T) throws -> T {
        if rebuilding { try db.execute(sql: "PRAGMA foreign_keys = OFF") }
        defer { if rebuilding { try? db.execute(sql: "PRAGMA foreign_keys = ON") } }
        var result: T?
        try db.inTransaction {
            result = try body(db)
            if rebuilding, let broken = try Row.fetchOne(db, sql: "PRAGMA foreign_key_check") {
                throw DatabaseError(
                    resultCode: .SQLITE_CONSTRAINT_FOREIGNKEY,
                    message: "the new shape leaves a broken reference in \(broken[0] as String)")
            }
            return .commit
        }
        return result!
    }

    /// The DDL of `changes`, from `old` to `new`, inside the transaction of ``alter(_:rebuilding:_:)``.
    ///
    /// - Parameter withoutRowID: how new text-keyed tables are made (seeds and app databases use
    ///   `WITHOUT ROWID`, see ``TableSQL/createTable(withoutRowID:)``).
    package static func apply(
        _ changes: [SchemaChange], from old: DatasetSchema, to new: DatasetSchema, withoutRowID: Bool, in db: Database
    ) throws {
        var rebuilt = Set<String>()
        for change in changes {
            switch change {
            case .typeAdded(let name):
                for statement in TableSQL(type: new.type(named: name)!).create(withoutRowID: withoutRowID) {
                    try db.execute(sql: statement)
                }
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
        for type in rebuilt { try rebuild(new.type(named: type)!, withoutRowID: withoutRowID, in: db) }
    }

    /// Builds `type`'s table anew in its new shape and moves the rows over. Every column the new
    /// shape has exists already (renames and additions came first).
    private static func rebuild(_ type: EntityType, withoutRowID: Bool, in db: Database) throws {
        let table = TableSQL(type: type)
        var building = type
        building.name = "_seedsync_rebuild"
        try db.execute(sql: TableSQL(type: building).createTable(withoutRowID: withoutRowID))
        try db.execute(
            sql: "INSERT INTO \(quote(building.name)) (\(table.columns)) SELECT \(table.columns) FROM \(table.table)")
        try db.execute(sql: "DROP TABLE \(table.table)")
        try db.execute(sql: "ALTER TABLE \(quote(building.name)) RENAME TO \(table.table)")
        for statement in table.createIndexes { try db.execute(sql: statement) }
    }
}
