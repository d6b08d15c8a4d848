import Foundation
import GRDB
import SeedSyncClient
import SeedSyncModel
import SeedSyncSQL
import SeedSyncSeed

/// A database whose token's scope values changed since its rows were read (PROTOCOL.md §10).
///
/// The database says which scope values it holds the rows of (`SeedMetadata/scopes`, `nil` for
/// every value); `GET /v1/schema` says which the token grants now. Each run, before it catches up:
/// - **values lost** leave the device in one transaction: the rows of scoped types outside the
///   grant are deleted, and every queued local edit that touches such a row (by its new values or
///   by the row as the database holds it) is dropped and reported `rejected` with code
///   `scope_revoked`, whose message names the row and the value; observers are told of the rows
///   that went. The database then holds the values it kept.
/// - **values gained** bring their rows alone (``gain(_:granting:into:info:)``), not the rows the
///   database has: queued edits are kept and pushed after it. A token that now grants every value
///   gains values it cannot list: a snapshot of the grant is downloaded beside the database and
///   swapped in as after an expired history (`Replacement.Reason.scopesGranted`).
extension ImportSession {
    func reconcileScopes(_ database: LocalDatabase, with info: SchemaInfo) async throws -> LocalDatabase {
        var held = database.metadata.scopes
        guard let scope = info.scope, held != info.scopes else { return database }
        if let granted = info.scopes {
            try await drop(outside: ScopeGrant.only(granted), of: scope, from: database, keeping: held, info: info)
            held = held?.filter(ScopeGrant.only(granted).includes) ?? granted
        }
        guard Self.gains(held: held, granted: info.scopes) else { return database }
        guard let held, let granted = info.scopes else {
            return try await replaceWithSnapshot(database, minRevision: info.minRevision, reason: .scopesGranted)
        }
        let gained = ScopeList(granted.filter { !ScopeGrant.only(held).includes($0) })
        return try await gain(gained, granting: ScopeList(granted), into: database, info: info)
    }

    /// Brings the rows of the scope values `gained` into `database`, which holds the others of
    /// `granted` at its revision R, without downloading what it has:
    ///
    /// 1. the scoped types' pages of the gained values alone (`scopes=` naming them), read at R or
    ///    later, then the change sets after R as the whole grant sees them (`scopes=` naming
    ///    `granted`), into a staging file beside the database (`DATABASE.migration`);
    /// 2. one transaction takes the staged rows in (a row that moved in from a held value is
    ///    overwritten), applies the change sets over every row (a row a page read after R is
    ///    written back to what it was, then brought forward again), checks that every row of a
    ///    scoped type is of a granted value, and records the grant; the foreign keys are checked
    ///    at its commit.
    ///
    /// The database then holds the grant's rows at the last revision read, as a snapshot of it
    /// would. A kill before the commit leaves the database as it was, and the next run downloads
    /// again; the app's observers are told of the rows that came.
    func gain(_ gained: ScopeList, granting granted: ScopeList, into database: LocalDatabase, info: SchemaInfo)
        async throws -> LocalDatabase
    {
        let schema = database.metadata.schema
        let revision = try await database.revision()
        let bytesBefore = client.bytesReceived
        let staging = try MigrationStaging(at: files.migration.path, types: schema.types.filter(\.isScoped))
        defer { files.migration.remove() }
        let rows: Int
        do {
            rows = try await stage(gained, granting: granted, into: staging, from: revision, of: database, info: info)
            try staging.close()
        } catch {
            try? staging.close()
            throw error
        }
        let (applied, events, copied) = try await gated {
            try await database.gained(
                granted.values, from: staging,
                pending: PendingChanges(schema: schema, resolution: configuration.conflicts))
        }
        if !copied.isEmpty {
            emit(.applied(AppliedChangeSet(revision: revision, types: copied)))
        }
        record(applied)
        record(events)
        let toRevision = try await database.revision()
        emit(
            .scopesGained(
                ScopeGain(
                    values: gained.values, fromRevision: revision, toRevision: toRevision, rowsDownloaded: rows,
                    bytesDownloaded: client.bytesReceived - bytesBefore)))
        emit(.progress(revision: toRevision, serverRevision: max(info.revision, toRevision)))
        return database
    }

    /// Step 1 of ``gain(_:granting:into:info:)``; returns the rows downloaded.
    private func stage(
        _ gained: ScopeList, granting granted: ScopeList, into staging: MigrationStaging, from revision: Int64,
        of database: LocalDatabase, info: SchemaInfo
    ) async throws -> Int {
        let excluded = Set(info.types.map(\.name)).subtracting(database.metadata.schema.types.map(\.name))
        return try await fill(
            staging, version: database.metadata.schemaVersion, from: revision, excluded: excluded, scopes: granted
        ) { _ in (nil, gained) }
    }

    /// Whether `granted` holds a value `held` does not (`nil`: every value).
    static func gains(held: [JSONValue]?, granted: [JSONValue]?) -> Bool {
        guard let held else { return false }
        guard let granted else { return true }
        return !ScopeGrant.only(granted).isSubset(of: ScopeGrant.only(held))
    }

    /// Deletes the rows outside `grant` and the local edits of them, in one transaction.
    private func drop(
        outside grant: ScopeGrant, of scope: ScopeDeclaration, from database: LocalDatabase, keeping held: [JSONValue]?,
        info: SchemaInfo
    ) async throws {
        let schema = database.metadata.schema
        let kept = held.map { $0.filter(grant.includes) } ?? info.scopes ?? []
        let (events, gone) = try await gated {
            try await database.write("delete the rows of \(scope.name) values the token no longer grants") { db in
                let events = try PendingChanges(schema: schema).dropEdits(outside: grant, of: scope, in: db)
                var gone: [String: AppliedChangeSet.Keys] = [:]
                for type in schema.types where type.isScoped {
                    let keys = try LocalScopes.delete(outside: grant, of: type, in: schema, db: db)
                    if !keys.isEmpty {
                        gone[type.name] = AppliedChangeSet.Keys(created: [], updated: [], deleted: keys)
                    }
                }
                try SeedMetadata.save(scopes: kept, in: db)
                return (events, gone)
            }
        }
        record(events)
        guard !gone.isEmpty else { return }
        let revision = try await database.revision()
        emit(.applied(AppliedChangeSet(revision: revision, types: gone)))
        emit(.progress(revision: revision, serverRevision: info.revision))
    }
}

extension LocalDatabase {
    /// Step 2 of ``ImportSession/gain(_:granting:into:info:)``: the rows and change sets of
    /// `staging` taken in, in one transaction, for a grant of `granted`; `pending` brings the local
    /// edits in line with the change sets, as a catch-up does.
    ///
    /// - Returns: the change sets applied, the events of the local edits, and the keys copied in by type.
    /// - Throws: ``ImportError/Code/invalidChangeSet`` when the server sent a row of a value not
    ///   granted, or the rows leave a reference to a missing row; nothing is written then.
    func gained(_ granted: [JSONValue], from staging: MigrationStaging, pending: PendingChanges) async throws
        -> (applied: [AppliedChangeSet], events: [ImportEvent], copied: [String: AppliedChangeSet.Keys])
    {
        let schema = metadata.schema
        let (path, staged) = (self.path, staging.types)
        do {
            return try await staging.attached(to: writer) { [self] db in
                var outcome: ([AppliedChangeSet], [ImportEvent], [String: AppliedChangeSet.Keys])?
                try db.inTransaction(.immediate) {
                    var copied: [String: AppliedChangeSet.Keys] = [:]
                    for type in staged.values {
                        let table = TableSQL(type: type)
                        let keys = try DatabaseValue.fetchAll(
                            db, sql: "SELECT \(table.key) FROM staging.\(table.table)")
                        guard !keys.isEmpty else { continue }
                        try db.execute(sql: table.upsertAll(from: "staging"))
                        copied[type.name] = AppliedChangeSet.Keys(
                            created: keys.map(ValueMapping.jsonKey), updated: [], deleted: [])
                    }
                    let applier = ChangeApplier(schema: schema)
                    let applied = try applier.apply(MigrationStaging.changeSets(in: db, checkedBy: applier), in: db)
                    let events = try pending.absorb(applied, in: db)
                    try LocalScopes.checkInside(.only(granted), of: schema, path: path, db: db)
                    try SeedMetadata.save(scopes: granted, in: db)
                    try notifyApp(ofChangesTo: nil, in: db)
                    outcome = (applied, events, copied)
                    return .commit
                }
                return outcome!
            }
        } catch let error as ImportError {
            throw error
        } catch let error as SeedError {
            throw ImportError(
                .invalidChangeSet,
                "the rows of the scope values gained were not taken in: \(error); \(path) keeps its rows")
        } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_FOREIGNKEY {
            throw ImportError(
                .invalidChangeSet,
                "the rows of the scope values gained leave a reference to a missing row; \(path) keeps its rows")
        } catch let error as DatabaseError {
            throw ImportError(
                SeedError.database(error, "take in the rows of the scope values gained", file: path),
                otherwise: .invalidDatabase, "\(path) keeps its rows")
        }
    }
}

/// The rows of a local database by scope value.
enum LocalScopes {
    /// Throws when a row of a scoped type is of a value `grant` does not hold: rows the server
    /// should not have sent.
    static func checkInside(_ grant: ScopeGrant, of schema: DatasetSchema, path: String, db: Database) throws {
        for type in schema.types where type.isScoped {
            guard let values = grant.argument(for: type, in: schema) else { continue }
            let outside = try DatabaseValue.fetchAll(
                db, sql: TableSQL(type: type).keysOutsideScopes + " LIMIT 1", arguments: [values])
            guard let key = outside.first else { continue }
            throw ImportError(
                .invalidChangeSet,
                "the server sent \(type.name)[\(ValueMapping.jsonKey(key).keyString ?? "?")] of a scope value this token does not grant; \(path) keeps its rows"
            )
        }
    }

    /// Deletes the rows of scoped `type` whose scope value `grant` does not hold.
    ///
    /// - Returns: their keys.
    static func delete(outside grant: ScopeGrant, of type: EntityType, in schema: DatasetSchema, db: Database) throws
        -> [JSONValue]
    {
        guard let values = grant.argument(for: type, in: schema) else { return [] }
        let table = TableSQL(type: type)
        let outside = try DatabaseValue.fetchAll(db, sql: table.keysOutsideScopes, arguments: [values])
        let statement = try db.cachedStatement(sql: table.delete)
        for key in outside { try statement.execute(arguments: [key]) }
        return outside.map(ValueMapping.jsonKey)
    }

    /// The scope value of `type[key]` as the database holds it, or `nil` when it has no such row.
    static func value(of type: EntityType, key: JSONValue, scope: ScopeDeclaration, in db: Database) throws
        -> JSONValue?
    {
        try DatabaseValue.fetchOne(
            db, sql: TableSQL(type: type).scopeOfRow, arguments: [ValueMapping.databaseValue(key: key)]
        ).map { ValueMapping.jsonValue($0, as: scope.type.fieldType) }
    }
}

extension PendingChanges {
    /// Drops every queued change set that touches a row outside `grant`: one it creates or
    /// updates into a value outside it, or one whose row the database holds in such a value.
    ///
    /// - Returns: a `rejected` event (code `scope_revoked`) for each, then the reference repairs.
    func dropEdits(outside grant: ScopeGrant, of scope: ScopeDeclaration, in db: Database) throws -> [ImportEvent] {
        var entries = try outbox.entries(in: db)
        var events: [ImportEvent] = []
        for entry in entries {
            guard let (row, value) = try firstRow(of: entry, outside: grant, scope: scope, in: db) else { continue }
            try drop(entry, from: &entries, in: db)
            events.append(
                .rejected(
                    id: entry.id, code: "scope_revoked",
                    message:
                        "\(row.type)[\(row.key)] belongs to \(scope.name) \(value.keyString ?? "?"), which the token no longer grants; the change set was not pushed"
                ))
        }
        return events.isEmpty ? [] : events + (try repairReferences(in: db))
    }

    private func firstRow(of entry: OutboxEntry, outside grant: ScopeGrant, scope: ScopeDeclaration, in db: Database)
        throws -> (RowID, JSONValue)?
    {
        for changes in entry.changeSet.changes {
            guard let type = outbox.schema.type(named: changes.type), type.isScoped else { continue }
            for key in changes.create + changes.update + changes.delete {
                guard let id = key.keyString else { continue }
                let written = changes.attributes[id].flatMap { type.scopeValue(key: key, attributes: $0) }
                let stored = try LocalScopes.value(of: type, key: key, scope: scope, in: db)
                for value in [written, stored].compactMap({ $0 }) where !grant.includes(value) {
                    return (RowID(type: type.name, key: id), value)
                }
            }
        }
        return nil
    }
}
