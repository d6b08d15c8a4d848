import GRDB
public import SeedSyncModel
import SeedSyncSQL
import SeedSyncStore

extension SQLiteSyncStore {
    /// Makes `schema` the newest version at the current revision (see
    /// `MaintainedSyncStore/upgrade(to:renaming:)`), in one transaction: the tables take the new
    /// shape (`SchemaAlteration`) and the version is recorded. Readers go on meanwhile (WAL) and
    /// see the old shape or the new, never a mix; writers wait for the transaction.
    ///
    /// All or nothing: the new version is checked whole first (`SchemaHistory.upgrading(to:renaming:at:)`)
    /// on the versions in memory, outside the write lock; then, in the transaction, planned again,
    /// its new tables' and indexes' names checked against every object the file has, applied, and
    /// the version read back as every server will read it: a version a server could not read is
    /// never committed.
    ///
    /// - Throws: `SchemaUpgradeError` for a change that cannot be made; nothing is changed then.
    public func upgrade(to schema: DatasetSchema, renaming renames: [FieldRename] = []) async throws -> SchemaUpgrade {
        let path = path
        // Planned on the versions in memory, outside the write lock: a refusal takes no lock.
        let current = served.get().versions
        try current.refuseUnreadable()
        let planned = try current.history.upgrading(to: schema, renaming: renames, at: current.history.newest.revision)
        let rebuilding = SchemaAlteration.rebuilds(planned.changes, from: current.schema)
        let upgrade = try await barrierWriteWithoutTransaction { db in
            try SchemaAlteration.alter(db, rebuilding: rebuilding) { db in
                let state = try LogState.fetch(db)
                // Read again only when another process upgraded since (versions are only appended).
                let versions =
                    state.schemaVersion == current.storedNewest ? current : try SchemaRecords.versions(db, path: path)
                try versions.refuseUnreadable()
                let history = versions.history
                let made = try history.upgrading(to: schema, renaming: renames, at: state.revision)
                guard SchemaAlteration.rebuilds(made.changes, from: history.newest.schema) == rebuilding else {
                    throw StoreError.invalidLoad("the schema changed while the upgrade started; run it again")
                }
                try Self.checkNames(of: made, in: db)
                try SchemaAlteration.apply(
                    made.changes, from: history.newest.schema, to: made.version.schema, withoutRowID: false, in: db)
                try SchemaRecords.insert(made.version, in: db)
                try SchemaRecords.readBack(made, after: history, in: db)
                return made
            }
        }
        served.set(ServedTables(ServedVersions(upgrade.history))) {
            $0.versions.storedNewest > $1.versions.storedNewest
        }
        return upgrade
    }

    /// Refuses a new type whose table, or a new reference whose index, would take the name of an
    /// object the file already has (a table, an index, a view or a trigger of any origin).
    private static func checkNames(of upgrade: SchemaUpgrade, in db: Database) throws {
        let schema = upgrade.version.schema
        var names: [(String, String)] = []
        for change in upgrade.changes {
            switch change {
            case .typeAdded(let name):
                let type = schema.type(named: name)!
                names.append((name, "the table of type \(name)"))
                names += type.indexNames.map { ($0, "the index of a reference of \(name)") }
            case .fieldAdded(let typeName, let field):
                guard schema.type(named: typeName)!.field(named: field)!.references != nil else { continue }
                names.append(("\(typeName)_\(field)_index", "the index of \(typeName).\(field)"))
            default:
                continue
            }
        }
        for (name, role) in names {
            if let kind = try String.fetchOne(
                db, sql: "SELECT type FROM sqlite_master WHERE name = ? COLLATE NOCASE", arguments: [name])
            {
                throw SchemaUpgradeError(
                    .invalidSchema,
                    "\(role) would be named \(name), but the database already has a \(kind) of that name; choose another name"
                )
            }
        }
    }
}
