import Foundation
import GRDB
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
/// - **values gained** bring their rows with a snapshot of the grant, downloaded beside the
///   database and swapped in as after an expired history (`Replacement.Reason.scopesGranted`):
///   queued edits are kept and pushed after it.
extension ImportSession {
    func reconcileScopes(_ database: LocalDatabase, with info: SchemaInfo) async throws -> LocalDatabase {
        let held = database.metadata.scopes
        guard let scope = info.scope, held != info.scopes else { return database }
        if let granted = info.scopes {
            try await drop(outside: ScopeGrant.only(granted), of: scope, from: database, keeping: held, info: info)
        }
        guard Self.gains(held: held, granted: info.scopes) else { return database }
        return try await replaceWithSnapshot(database, minRevision: info.minRevision, reason: .scopesGranted)
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

/// The rows of a local database by scope value.
enum LocalScopes {
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
