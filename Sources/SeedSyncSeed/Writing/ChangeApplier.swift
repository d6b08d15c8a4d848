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

    /// Applies `changeSets` in order inside the current transaction of `db`.
    ///
    /// Every change set is validated first; then the rows they write are written once each, in
    /// key order (per type), with the last change set's version of each row: the same rows as
    /// applying them one by one, but a table's pages are visited once each, in order, so a
    /// transaction larger than the page cache does not write a spilled page out again (the
    /// foreign keys are deferred to the commit, so the order cannot break them).
    ///
    /// With `stopsEarly` (a sync engine whose edit sessions may be waiting for the transaction),
    /// each change set is written on its own, and after each one the applier stops when
    /// `stopsEarly()` says so: each change set leaves the rows consistent.
    ///
    /// - Returns: what each applied change set did, in order: all of them unless it stopped early.
    /// - Throws: ``SeedError`` for a change set out of order or one that does not fit the schema;
    ///   the caller's transaction must then roll back.
    @discardableResult
    package func apply(_ changeSets: [ChangeSet], in db: Database, stopsEarly: (() -> Bool)? = nil) throws
        -> [AppliedChangeSet]
    {
        var revision = try SeedMetadata.storedRevision(db)
        var applied: [AppliedChangeSet] = []
        var writes = RowWrites()
        for changeSet in changeSets {
            if let stopsEarly, !applied.isEmpty {
                try write(writes.take(), in: db)
                if stopsEarly() { break }
            }
            guard let next = changeSet.revision, revision < .max, next == revision + 1 else {
                throw SeedError.invalidData(
                    "change set \(changeSet.revision.map(String.init) ?? "without a revision") does not follow revision \(revision)"
                )
            }
            applied.append(try add(changeSet, revision: next, to: &writes))
            revision = next
        }
        try write(writes.take(), in: db)
        try SeedMetadata.save(revision: revision, in: db)
        return applied
    }

    /// Validates `changeSet` and adds its rows to `writes`.
    private func add(_ changeSet: ChangeSet, revision: Int64, to writes: inout RowWrites) throws -> AppliedChangeSet {
        var applied = AppliedChangeSet(revision: revision, types: [:])
        guard !changeSet.changes.isEmpty else { return applied }
        let changes: [ValidatedChanges]
        do {
            changes = try schema.validate(changeSet)
        } catch {
            throw SeedError.invalidData("change set \(revision) does not fit the schema: \(error)")
        }
        for change in changes {
            writes.add(change, revision: revision)
            applied.types[change.type.name] = AppliedChangeSet.Keys(
                created: change.creates.map(\.key), updated: change.updates.map(\.key), deleted: change.deletes
            )
        }
        return applied
    }

    /// Writes the last version of each row in `writes`, type by type, in key order.
    private func write(_ writes: [String: [RowWrites.Write]], in db: Database) throws {
        for type in schema.types {
            guard let rows = writes[type.name] else { continue }
            let table = tables[type.name]!
            let upsert = try db.cachedStatement(sql: table.upsert)
            let delete = try db.cachedStatement(sql: table.delete)
            let sorted = rows.sorted {
                JSONValue.keyPrecedes($0.key, $1.key) || ($0.key == $1.key && $0.order < $1.order)
            }
            for (index, write) in sorted.enumerated() {
                // A later change set writes this row again: its version is the one kept.
                if index + 1 < sorted.count, sorted[index + 1].key == write.key { continue }
                if let row = write.row {
                    try StatementValues.execute(upsert, row: row, of: table.type, revision: write.revision)
                } else {
                    try delete.execute(arguments: [ValueMapping.databaseValue(key: write.key)])
                }
            }
        }
    }
}

/// The rows a run of change sets writes, by type, before they are written (see
/// ``ChangeApplier/apply(_:in:stopsEarly:)``).
struct RowWrites {
    /// One change set's write of one row: its values, or `nil` for a delete.
    struct Write {
        var key: JSONValue
        var row: RowValues?
        var revision: Int64
        /// The position among the writes of the type: a later write of the same key wins.
        var order: Int
    }

    private var writes: [String: [Write]] = [:]

    mutating func add(_ change: ValidatedChanges, revision: Int64) {
        // Appended in place: the array taken out of the dictionary would be copied on every call.
        writes[change.type.name, default: []].append(rows: change, revision: revision)
    }

    /// Every write held, by type; none is held after.
    mutating func take() -> [String: [Write]] {
        defer { writes = [:] }
        return writes
    }
}

extension [RowWrites.Write] {
    fileprivate mutating func append(rows change: ValidatedChanges, revision: Int64) {
        for row in change.creates + change.updates {
            append(.init(key: row.key, row: row, revision: revision, order: count))
        }
        for key in change.deletes {
            append(.init(key: key, row: nil, revision: revision, order: count))
        }
    }
}
