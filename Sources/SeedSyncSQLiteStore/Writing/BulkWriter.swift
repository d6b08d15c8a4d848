import GRDB
import SeedSyncModel
import SeedSyncSQL
package import SeedSyncStore

extension SQLiteSyncStore {
    /// Writes rows in bulk as one new revision, in one transaction.
    ///
    /// Bulk revisions are too large to replay through `/v1/sync`, so they are not logged: the
    /// change log is cleared and `minRevision` moves up to the new revision, and clients older than
    /// it download a new snapshot. Rows are upserted (a loaded row replaces the stored one).
    ///
    /// ```swift
    /// let (revision, count) = try await store.bulkWrite { writer in
    ///     var rows = try NDJSONRowReader(path: "events.ndjson", type: eventsType)
    ///     return try writer.upsert(&rows, into: "events")
    /// }
    /// ```
    ///
    /// - Returns: the revision the load became, and what `body` returned.
    /// - Throws: ``StoreError`` when a loaded row holds a reference to a missing row, and whatever
    ///   the row sources throw; nothing is written then.
    @discardableResult
    package func bulkWrite<T: Sendable>(
        _ body: @escaping @Sendable (inout BulkWriter) throws -> T
    ) async throws -> (revision: Int64, result: T) {
        let written = try await writeTransaction { db in
            let state = try LogState.fetch(db)
            let served = try self.served(db, state)
            var writer = BulkWriter(db: db, tables: served.tables, revision: state.revision + 1)
            let result = try body(&writer)
            try writer.checkReferences(schema: served.schema)
            try db.execute(sql: "DELETE FROM _seedsync_changes")
            try ScopeIndex.remove(through: .max, in: db)
            try LogState.save(db, revision: writer.revision, minRevision: writer.revision)
            return (writer.revision, result)
        }
        watches.publish(written.0)
        return written
    }
}

/// Upserts rows during ``SQLiteSyncStore/bulkWrite(_:)``. The database connection never escapes.
package struct BulkWriter {
    fileprivate let db: Database
    fileprivate let tables: [String: TableSQL]
    /// The revision every written row gets.
    package let revision: Int64
    fileprivate var loadedTypes: Set<String> = []

    /// Upserts every row of `rows` into `type`.
    ///
    /// - Returns: the number of rows written.
    @discardableResult
    package mutating func upsert(_ rows: inout some RowSource, into type: String) throws -> Int {
        guard let table = tables[type] else { throw SyncStoreError.unknownType(type) }
        loadedTypes.insert(type)
        let statement = try db.cachedStatement(sql: table.upsert)
        var count = 0
        let integerKeys = table.type.primaryKey.type == .integer
        while let row = try rows.nextRow() {
            if integerKeys, let key = row.key.intValue, !DatasetSchema.committedKeys.contains(key) {
                throw SyncStoreError.invalidChangeSet(.keyOutOfRange(type, key))
            }
            try StatementValues.execute(statement, row: row, of: table.type, revision: revision)
            count += 1
        }
        return count
    }

    /// Fails when a loaded type holds a reference to a missing row.
    fileprivate func checkReferences(schema: DatasetSchema) throws {
        let loaded = schema.types.filter { loadedTypes.contains($0.name) }
        guard let dangling = try TableSQL.firstDanglingReference(among: loaded, tables: tables, in: db) else { return }
        let referrer = tables[dangling.type.name]!.referrer(through: dangling.field)
        let row = try DatabaseValue.fetchOne(db, sql: referrer, arguments: [dangling.value])
        let key = row.map(ValueMapping.jsonKey)?.keyString ?? "?"
        let reference = ValueMapping.jsonKey(dangling.value).keyString ?? "?"
        throw StoreError.invalidLoad(
            "\(dangling.type.name)[\(key)].\(dangling.field.name) references \(dangling.target)[\(reference)], which does not exist; nothing was loaded"
        )
    }
}
