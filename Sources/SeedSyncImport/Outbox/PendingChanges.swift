import GRDB
import SeedSyncModel
import SeedSyncSQL
import SeedSyncSeed

/// What the sync does with the outbox: the change sets to push next, the answer to each, and the
/// server's change sets for rows with pending edits. Every method runs inside the caller's
/// transaction and returns the events to report once it commits.
///
/// The rules (PROTOCOL.md §5, SEED-FORMAT.md §9.6):
/// - **Applied**: the temporary keys become the real ones in the rows, in every reference to them,
///   in the shadows and in later change sets; later change sets based on a row it wrote are rebased
///   on its revision; the entry is removed.
/// - **Conflict** and **rejected**: the entry is removed, and every row it touched goes back to
///   what the remaining change sets make of it, or to its shadow (the server's state at this
///   database's revision); a conflict's rows arrive with the catch-up of the same run.
/// - Then no pending row may be left referencing a missing row, nor missing while another row
///   references it: the latest change set behind such a row is dropped as well
///   (``ImportEvent/rejected(id:code:message:)`` with code `broken_reference`), until none is.
package struct PendingChanges: Sendable {
    let outbox: Outbox
    /// What a server change does to a pending edit of the same row (see ``ConflictResolution``).
    let resolution: ConflictResolution
    /// Change sets per push; the server accepts at most 100.
    package static let maxPerPush = 100
    /// Bytes of change sets per push, and the largest change set a local write may queue: half
    /// the server's default body limit (8 MiB).
    static let maxPushBytes = 4 << 20

    init(schema: DatasetSchema, resolution: ConflictResolution = .serverWins) {
        outbox = Outbox(schema: schema)
        self.resolution = resolution
    }

    /// The change sets to push next: the oldest ones, at most `limit` and ``maxPushBytes``, up to
    /// the first that depends on one before it: it touches a row one before it touches (its base
    /// revision moves when that one is applied), or references a row one before it creates (its
    /// temporary key becomes a real one). It is pushed once that one is answered.
    func nextPush(limit: Int = maxPerPush, in db: Database) throws -> [OutboxEntry] {
        var batch: [OutboxEntry] = []
        var bytes = 0
        var touched = Set<RowID>()
        var created = Set<RowID>()
        for entry in try outbox.entries(in: db) {
            bytes += entry.changeSet.jsonBytes().count
            guard batch.isEmpty || (batch.count < limit && bytes <= Self.maxPushBytes) else { break }
            let rows = entry.touchedRows
            guard !rows.contains(where: touched.contains),
                entry.referencedRows(in: outbox.schema).isDisjoint(with: created)
            else { break }
            batch.append(entry)
            touched.formUnion(rows)
            created.formUnion(rows.filter { entry.creates($0) })
        }
        return batch
    }

    /// Drops `entry`, which the server refused for its size alone (413 when pushed by itself).
    func dropTooLarge(_ entry: OutboxEntry, reason: String, in db: Database) throws -> [ImportEvent] {
        var entries = try outbox.entries(in: db)
        guard entries.contains(where: { $0.position == entry.position }) else { return [] }
        try drop(entry, from: &entries, in: db)
        return [.rejected(id: entry.id, code: "too_large", message: reason)] + (try repairReferences(in: db))
    }

    /// Applies the server's answers to pushed change sets, in order.
    ///
    /// A conflicting entry is kept rather than dropped when conflicts may be resolved, the server's
    /// rows are newer than the database and the entry is not in `retried`: the catch-up brings
    /// those rows and resolves the conflict in ``absorb(_:in:)``; `kept` gives the revision the
    /// database must reach before the entry is pushed again.
    func handle(_ results: [PushResult], retried: Set<String> = [], in db: Database) throws -> (
        events: [ImportEvent], kept: [String: Int64]
    ) {
        var entries = try outbox.entries(in: db)
        var events: [ImportEvent] = []
        var kept: [String: Int64] = [:]
        var collided = false
        let stored = try SeedMetadata.storedRevision(db)
        for result in results {
            // Not in the outbox (never for results this client's own pushes answer): nothing to do.
            guard let entry = entries.first(where: { $0.id == result.id }) else { continue }
            switch result.status {
            case .applied(let revision, let keys):
                collided = try apply(entry, revision: revision, keys: keys, entries: &entries, in: db) || collided
                events.append(.pushed(id: entry.id, revision: revision, keys: keys))
            case .conflict(let truth):
                if resolution.resolves, !retried.contains(entry.id), let latest = Self.latestRevision(in: truth),
                    latest > stored
                {
                    kept[entry.id] = latest
                    continue
                }
                // The server's rows are at its latest revision and may reference rows this
                // database does not have yet: they are reported, and the rows go back to their
                // shadows (the server's state at this database's revision); the catch-up of the
                // same run brings them to the server's current state.
                try drop(entry, from: &entries, in: db)
                events.append(.conflict(id: entry.id, changeSet: truth))
            case .rejected(let code, let message):
                try drop(entry, from: &entries, in: db)
                events.append(.rejected(id: entry.id, code: code, message: message))
            }
        }
        // Applying keeps every reference whole, unless a real key was known here already (a lost
        // answer replayed); dropping may break one.
        guard collided || events.contains(where: { if case .pushed = $0 { false } else { true } }) else {
            return (events, kept)
        }
        return (events + (try repairReferences(in: db)), kept)
    }

    /// The newest revision of the rows in a `conflict` answer.
    private static func latestRevision(in truth: ChangeSet) -> Int64? {
        truth.changes.flatMap { $0.attributes.values.compactMap { $0[SchemaNames.revisionColumn]?.intValue } }.max()
    }

    /// Removes `entry` and writes every row it touched as the other entries, or the server, have it.
    func drop(_ entry: OutboxEntry, from entries: inout [OutboxEntry], in db: Database) throws {
        entries.removeAll { $0.position == entry.position }
        try outbox.remove(entry, in: db)
        for row in entry.touchedRows {
            try outbox.recompute(row, entries: entries, in: db)
        }
    }

    /// `entry` was applied as `revision`: its temporary keys become `keys` everywhere, later
    /// entries are rebased on it, and it leaves the outbox. Returns whether a real key was known
    /// here already (see ``remap(_:remaining:replayed:in:)``).
    ///
    /// A **replayed** answer (the first was lost) can come after this database got past
    /// `revision` another way (a replacement, a catch-up without pushing): its shadows then hold
    /// the server's newer state, which wins over the entry's version, and a created row the
    /// server has not got any more goes.
    private func apply(
        _ entry: OutboxEntry, revision: Int64, keys: [String: [String: JSONValue]], entries: inout [OutboxEntry],
        in db: Database
    ) throws -> Bool {
        entries.removeAll { $0.position == entry.position }
        try outbox.remove(entry, in: db)
        let stored = try SeedMetadata.storedRevision(db)
        let replayed = revision <= stored
        let map = Self.integerKeys(keys)
        var known = try remap(map, remaining: &entries, replayed: replayed, in: db)
        var entry = entry
        entry.changeSet = entry.changeSet.remapping(map, in: outbox.schema) ?? entry.changeSet
        if replayed { known.formUnion(entry.touchedRows) }
        try rebase(on: entry, revision: revision, keeping: known, remaining: &entries, in: db)
        for row in entry.touchedRows {
            try outbox.recompute(row, entries: entries, in: db)
        }
        return !known.isEmpty
    }

    /// The key map of an applied result as integers; text keys are never temporary.
    private static func integerKeys(_ keys: [String: [String: JSONValue]]) -> [String: [Int64: Int64]] {
        keys.mapValues { map in
            Dictionary(map.compactMap { key, value in Int64(key).flatMap { k in value.intValue.map { (k, $0) } } }) {
                $1
            }
        }.filter { !$0.value.isEmpty }
    }

    /// Replaces temporary keys by real ones in the tables, the shadows and the later change sets.
    ///
    /// A real key can be known here already when the answer was lost and the server's row came
    /// since (a replacement, a catch-up without pushing): the server's row, and its shadow when a
    /// later local edit has one, win over the temporary row; when the answer is `replayed` after
    /// this database got past it, a real row that is not here was deleted on the server. Returns
    /// those rows.
    private func remap(_ map: [String: [Int64: Int64]], remaining: inout [OutboxEntry], replayed: Bool, in db: Database)
        throws -> Set<RowID>
    {
        var known = Set<RowID>()
        for (typeName, keys) in map {
            // A type this database does not have cannot hold temporary keys.
            guard let type = outbox.schema.type(named: typeName) else { continue }
            for (temporary, real) in keys {
                let realRow = RowID(type: typeName, key: String(real))
                let temporaryRow = RowID(type: typeName, key: String(temporary))
                let present = try outbox.localRow(realRow, in: db)
                let shadowed = try outbox.shadow(of: realRow, in: db) != nil
                if present != nil || shadowed || replayed {
                    known.insert(realRow)
                    if !shadowed { try outbox.setShadow(of: realRow, to: present, in: db) }
                    try outbox.removeShadow(of: temporaryRow, in: db)
                } else {
                    try outbox.moveShadow(of: temporaryRow, to: realRow.key, in: db)
                }
                try replaceKey(temporary, with: real, of: type, rowExists: present != nil, in: db)
            }
        }
        for index in remaining.indices {
            guard let remapped = remaining[index].changeSet.remapping(map, in: outbox.schema) else { continue }
            remaining[index].changeSet = remapped
            try outbox.save(remaining[index], in: db)
        }
        return known
    }

    /// Gives the row of `type` at `temporary` the key `real`, in its table and in every reference to
    /// it; when the server's row is there already (`rowExists`), the temporary row is deleted instead.
    private func replaceKey(_ temporary: Int64, with real: Int64, of type: EntityType, rowExists: Bool, in db: Database)
        throws
    {
        let table = TableSQL(type: type)
        if rowExists {
            try db.cachedStatement(sql: table.delete).execute(arguments: [temporary])
        } else {
            try db.cachedStatement(sql: "UPDATE \(table.table) SET \(table.key) = ? WHERE \(table.key) = ?")
                .execute(arguments: [real, temporary])
        }
        for referrer in outbox.schema.types {
            for field in referrer.fields where field.references == type.name {
                let referring = TableSQL(type: referrer)
                try db.cachedStatement(
                    sql: "UPDATE \(referring.table) SET \(quote(field.name)) = ? WHERE \(quote(field.name)) = ?"
                ).execute(arguments: [real, temporary])
            }
        }
    }

    /// After `entry` was applied as `revision`: its rows' shadows are its versions at that
    /// revision (but for the `known` rows, whose shadows hold the server's state already), and
    /// later change sets based on what it wrote are based on `revision`.
    private func rebase(
        on entry: OutboxEntry, revision: Int64, keeping known: Set<RowID>, remaining: inout [OutboxEntry],
        in db: Database
    ) throws {
        var bases: [RowID: (old: Int64, new: Int64)] = [:]
        for (row, base) in entry.writtenRows { bases[row] = (base, revision) }
        for index in remaining.indices {
            guard let rebased = remaining[index].changeSet.rebasing(bases) else { continue }
            remaining[index].changeSet = rebased
            try outbox.save(remaining[index], in: db)
        }
        for row in entry.touchedRows where !known.contains(row) {
            guard case .some(let version) = entry.version(of: row) else { continue }
            try outbox.setShadow(
                of: row, to: version.map { $0.merging([SchemaNames.revisionColumn: .int(revision)]) { $1 } }, in: db)
        }
    }

    /// After change sets from the server were applied: the shadows of the rows they wrote become
    /// what the server wrote. A row the server changed keeps the server's version (the pending
    /// change set will conflict); a row it wrote at the revision already known (this client's
    /// own applied change set coming back) shows the pending edits again.
    func absorb(_ applied: [AppliedChangeSet], in db: Database) throws -> [ImportEvent] {
        let shadowed = Set(try outbox.shadowedRows(in: db))
        guard !shadowed.isEmpty else { return [] }
        var entries = try outbox.entries(in: db)
        var written = Set<RowID>()
        for changeSet in applied {
            for (type, keys) in changeSet.types {
                for key in keys.created + keys.updated + keys.deleted {
                    guard let string = key.keyString, case let row = RowID(type: type, key: string),
                        shadowed.contains(row)
                    else { continue }
                    written.insert(row)
                }
            }
        }
        var events: [ImportEvent] = []
        for row in written.sorted() {
            let base = try outbox.shadow(of: row, in: db)
            let known = base??[SchemaNames.revisionColumn]
            let current = try outbox.localRow(row, in: db)
            try outbox.setShadow(of: row, to: current, in: db)
            if let known, known == current?[SchemaNames.revisionColumn] {
                try outbox.recompute(row, entries: entries, in: db)
            } else if let event = try resolve(row, base: base ?? nil, server: current, entries: &entries, in: db) {
                events.append(event)
            }
        }
        // A server change set breaks a pending row's reference only by deleting its target, by
        // writing a row the pending one edits, or by referencing a row a pending change set deleted.
        let serverDeletes = applied.contains { $0.types.values.contains { !$0.deleted.isEmpty } }
        let pendingDeletes = entries.contains { $0.changeSet.changes.contains { !$0.delete.isEmpty } }
        guard serverDeletes || !written.isEmpty || pendingDeletes else { return events }
        return events + (try repairReferences(in: db))
    }

    /// The server changed `row`, which pending entries change too: the ``resolution`` decides.
    /// Resolved, every entry's version of the row becomes the resolved row on the server's
    /// revision (under a new id), and so does the app's row; else the server's row stays and the
    /// edit is reported lost.
    private func resolve(
        _ row: RowID, base: [String: JSONValue]?, server: [String: JSONValue]?, entries: inout [OutboxEntry],
        in db: Database
    ) throws -> ImportEvent? {
        guard let version = entries.last(where: { $0.version(of: row) != nil })?.version(of: row) else { return nil }
        func fields(_ row: [String: JSONValue]?) -> [String: JSONValue]? {
            row.map { $0.filter { $0.key != SchemaNames.revisionColumn } }
        }
        let conflict = Conflict(
            type: row.type, key: try outbox.key(of: row), local: fields(version), base: fields(base),
            server: fields(server))
        // The server's row is the local version (a push whose answer was lost): nothing was lost.
        guard conflict.local != conflict.server else { return nil }
        guard let server, let resolved = resolution.resolution(of: conflict) else { return .overwritten(conflict) }
        let key = try outbox.type(row.type).primaryKey.name
        let pushing = resolved.filter { $0.key != SchemaNames.revisionColumn && $0.key != key }
        // The server has the row as resolved already (a push whose answer was lost, say): the
        // entry is left as it is, so that its id gets the server's first answer again.
        guard pushing != conflict.server else { return nil }
        var attributes = pushing
        attributes[SchemaNames.revisionColumn] = server[SchemaNames.revisionColumn]
        for index in entries.indices where entries[index].version(of: row) != nil {
            guard let changes = entries[index].changeSet.changes.firstIndex(where: { $0.type == row.type }) else {
                continue
            }
            entries[index].changeSet.changes[changes].attributes[row.key] = attributes
            // Another change set: the server answers an id it has seen with what it answered then.
            entries[index].id = LocalChanges.newID()
            try outbox.save(entries[index], in: db)
        }
        try outbox.put(row, attributes, in: db)
        return .merged(conflict, pushing: pushing)
    }

    /// Drops the latest pending change set behind each pending row that references a missing row,
    /// is missing while referenced, or is edited although no pending change set creates it and
    /// the server does not have it, until no such row is left.
    func repairReferences(in db: Database) throws -> [ImportEvent] {
        var entries = try outbox.entries(in: db)
        var events: [ImportEvent] = []
        while let (victim, event) = try nextBrokenEntry(entries, in: db) {
            try drop(victim, from: &entries, in: db)
            events.append(event)
        }
        return events
    }

    /// Writes `entries` and the shadows of `rows` into the database at `path`, a seed or snapshot
    /// about to replace the app's database, in one transaction: the shadows are its rows (the
    /// server's newer state), the pending rows are written over them again, and broken references
    /// are repaired. The replacement then carries the outbox over, all of it or nothing.
    ///
    /// When the file has another schema, the entries are not carried: written for the old one,
    /// they could drop the values of new fields. Each is reported as rejected (`schema_changed`).
    func carry(_ entries: [OutboxEntry], shadowing rows: [RowID], from schemaHash: String, into path: String) throws
        -> [ImportEvent]
    {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        guard try queue.read({ db in try SeedMetadata.storedSchemaHash(db) }) == schemaHash else {
            return entries.map { entry in
                .rejected(
                    id: entry.id, code: "schema_changed",
                    message:
                        "the database was replaced by one of another schema, which this change set was not written for; it was dropped"
                )
            }
        }
        return try queue.write { db in
            try Outbox.create(in: db)
            for entry in entries { try outbox.append(id: entry.id, entry.changeSet, in: db) }
            for row in rows { try outbox.setShadow(of: row, to: try outbox.localRow(row, in: db), in: db) }
            for row in rows { try outbox.recompute(row, entries: entries, in: db) }
            return try repairReferences(in: db)
        }
    }

    /// The next change set that can never apply, and the event that reports it: one that edits
    /// a row the server deleted (a conflict, as the server would answer it), or the latest one
    /// behind a broken reference.
    private func nextBrokenEntry(_ entries: [OutboxEntry], in db: Database) throws -> (OutboxEntry, ImportEvent)? {
        guard !entries.isEmpty else { return nil }
        var touching: [RowID: [Int]] = [:]
        for (index, entry) in entries.enumerated() {
            for row in entry.touchedRows { touching[row, default: []].append(index) }
        }
        let absent = try outbox.shadowsOfMissingRows(in: db)
        for row in try outbox.shadowedRows(in: db).sorted() {
            guard let indices = touching[row], let first = indices.first.map({ entries[$0] }),
                let latest = indices.last.map({ entries[$0] })
            else { continue }
            if absent.contains(row), !first.creates(row) {
                let gone = ChangeSet(
                    changes: [TypeChanges(type: row.type, delete: [try outbox.key(of: row)])], conflict: true)
                return (first, .conflict(id: first.id, changeSet: gone))
            }
            if let problem = try outbox.brokenReference(of: row, in: db) {
                return (
                    latest,
                    .rejected(
                        id: latest.id, code: "broken_reference",
                        message: "\(problem); the change set was dropped from the outbox")
                )
            }
        }
        return nil
    }
}
