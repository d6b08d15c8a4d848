package import GRDB
package import SeedSyncModel
import SeedSyncSQL

/// Applies `/v1/sync` change sets to the tables of a seed-format database.
///
/// Shared by `seed-build` (catch-up) and the importer, so both reach the same state from the same
/// change sets. Each change set must carry the revision after the stored one (or, from an answer
/// read for some scope values, any later one: ``CheckedChangeSet/mayFollowGap``); it is validated
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

    /// Checks `changeSet` against the schema: what ``apply(_:in:stopsEarly:)-(([CheckedChangeSet],_,_))``
    /// writes. It needs no database, so a reader can check each change set as it arrives, off the
    /// connection that writes them (the importer checks an answer while the one before is written).
    ///
    /// ```swift
    /// let checked = try response.changeSets.map { try applier.check($0) }
    /// ```
    ///
    /// - Parameter keepingSource: whether to keep `changeSet` itself beside its rows (an importer
    ///   with a merge handler shows the change sets as the server sent them).
    /// - Throws: ``SeedError`` `invalidData` naming the change set and the first problem.
    package func check(_ changeSet: ChangeSet, keepingSource: Bool = false) throws(SeedError) -> CheckedChangeSet {
        var changes: [ValidatedChanges] = []
        if !changeSet.changes.isEmpty {
            do {
                changes = try schema.validate(changeSet)
            } catch {
                let name = changeSet.revision.map { "change set \($0)" } ?? "a change set without a revision"
                throw SeedError.invalidData("\(name) does not fit the schema: \(error)")
            }
        }
        return CheckedChangeSet(revision: changeSet.revision, changes: changes, source: keepingSource ? changeSet : nil)
    }

    /// Checks `changeSets` (``check(_:keepingSource:)``), then applies them in order inside the
    /// current transaction of `db`.
    @discardableResult
    package func apply(_ changeSets: [ChangeSet], in db: Database, stopsEarly: (() -> Bool)? = nil) throws
        -> [AppliedChangeSet]
    {
        try apply(changeSets.map { try check($0) }, in: db, stopsEarly: stopsEarly)
    }

    /// Applies checked change sets in order inside the current transaction of `db`.
    ///
    /// The rows they write are written once each, in key order (per type), with the last change
    /// set's version of each row: the same rows as applying them one by one, but a table's pages
    /// are visited once each, in order, so a transaction larger than the page cache does not write
    /// a spilled page out again (the foreign keys are deferred to the commit, so the order cannot
    /// break them).
    ///
    /// With `stopsEarly` (a sync engine whose edit sessions may be waiting for the transaction),
    /// each change set is written on its own, and after each one the applier stops when
    /// `stopsEarly()` says so: each change set leaves the rows consistent.
    ///
    /// - Returns: what each applied change set did, in order: all of them unless it stopped early.
    /// - Throws: ``SeedError`` for a change set out of order; the caller's transaction must then
    ///   roll back.
    @discardableResult
    package func apply(_ changeSets: [CheckedChangeSet], in db: Database, stopsEarly: (() -> Bool)? = nil) throws
        -> [AppliedChangeSet]
    {
        var revision = try SeedMetadata.storedRevision(db)
        var chain = try SeedMetadata.storedChain(db)
        var applied: [AppliedChangeSet] = []
        var writes = RowWrites()
        for changeSet in changeSets {
            if let stopsEarly, !applied.isEmpty {
                try write(writes.take(), in: db)
                if stopsEarly() { break }
            }
            if changeSet.isGapMark, let next = changeSet.revision, next <= revision {
                continue
            }
            guard let next = changeSet.revision, revision < .max,
                next == revision + 1 || (changeSet.mayFollowGap && next > revision)
            else {
                throw SeedError.invalidData(
                    "change set \(changeSet.revision.map(String.init) ?? "without a revision") does not follow revision \(revision)"
                )
            }
            for change in changeSet.changes { writes.add(change, revision: next) }
            applied.append(changeSet.applied)
            revision = next
            chain = changeSet.chain
        }
        try write(writes.take(), in: db)
        try SeedMetadata.save(revision: revision, chain: chain, in: db)
        return applied
    }

    /// Writes the last version of each row in `writes`, type by type, in key order.
    private func write(_ writes: [String: [RowWrites.Write]], in db: Database) throws {
        for type in schema.types {
            guard let rows = writes[type.name] else { continue }
            let table = tables[type.name]!
            let upsert = try db.cachedStatement(sql: table.upsert)
            let delete = try db.cachedStatement(sql: table.delete)
            // Positions sorted, not the writes: moving a write retains and releases its values.
            let order = rows.indices.sorted {
                JSONValue.keyPrecedes(rows[$0].key, rows[$1].key) || (rows[$0].key == rows[$1].key && $0 < $1)
            }
            for (index, position) in order.enumerated() {
                let write = rows[position]
                // A later change set writes this row again: its version is the one kept.
                if index + 1 < order.count, rows[order[index + 1]].key == write.key { continue }
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
    /// One change set's write of one row: its values, or `nil` for a delete. Of two writes of the
    /// same key, the later in the list wins.
    struct Write {
        var key: JSONValue
        var row: RowValues?
        var revision: Int64
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
            append(.init(key: row.key, row: row, revision: revision))
        }
        for key in change.deletes {
            append(.init(key: key, row: nil, revision: revision))
        }
    }
}
