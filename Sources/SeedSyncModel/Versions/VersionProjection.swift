/// Serves stored rows and change sets in one version of a ``SchemaHistory``, whatever version
/// they were written in, and turns a change set a client of that version pushes into the newest.
///
/// A row is read member by member: each field of the served version takes the value of the
/// member named by any name the field ever had. A field the row was written without (added
/// later, or dropped before) takes its absent value: the default it was added with, or the one it
/// had when dropped, else `null` (see ``Field/absentValue``). Members the version does not know
/// (newer fields, columns not yet in any version) are left out, and so are types it does not have.
/// A row that lacks a field its own version has, and the newest version still has, was changed
/// under the store: that is `schema_mismatch`, never served as a default. (A field a later version
/// dropped may be missing from rows written in between: its column went before the upgrade said so.)
///
/// ```swift
/// let projection = try VersionProjection(history: history, version: 1)
/// let old = try projection.project(changeSet)  // as a client of version 1 expects it
/// ```
public struct VersionProjection: Sendable {
    public let history: SchemaHistory
    /// The version served.
    public let target: SchemaVersion
    let targetIndex: Int
    private let slots: [String: [Slot]]
    /// The lineages of every type's fields over the history, made once (see ``SchemaHistory/lineagesByType()``).
    private let lineages: [String: [FieldLineage]]

    /// One field of the served version: its name there and its lineage.
    struct Slot: Sendable {
        var name: String
        var lineage: FieldLineage
    }

    /// The projection to version `number` of `history`.
    ///
    /// - Throws: ``SyncStoreError`` `unknownSchemaVersion` when the history has no such version.
    public init(history: SchemaHistory, version number: Int) throws(SyncStoreError) {
        try self.init(history: history, version: number, lineages: history.lineagesByType())
    }

    /// ``init(history:version:)`` with the history's lineages made already: a store makes a
    /// projection to each version it serves from one set.
    package init(history: SchemaHistory, version number: Int, lineages: [String: [FieldLineage]])
        throws(SyncStoreError)
    {
        guard let index = history.versions.firstIndex(where: { $0.number == number }) else {
            throw .unknownSchemaVersion(number, kept: history.versions.map(\.number))
        }
        self.history = history
        self.lineages = lineages
        targetIndex = index
        target = history.versions[index]
        var slots: [String: [Slot]] = [:]
        for type in target.schema.types {
            var byName: [String: FieldLineage] = [:]
            for lineage in lineages[type.name] ?? [] {
                if let field = lineage.fields[index] { byName[field.name] = lineage }
            }
            slots[type.name] = type.fields.map { field in Slot(name: field.name, lineage: byName[field.name]!) }
        }
        self.slots = slots
    }

    /// The projection to the newest version of `history`.
    public init(newestOf history: SchemaHistory) {
        try! self.init(history: history, version: history.newest.number)
    }

    /// Whether the served version is the newest: pushes need no translation, pages no projection.
    public var isNewest: Bool { targetIndex == history.versions.count - 1 }

    /// Whether change sets of `revision` are served exactly as written: they were written in the
    /// served version.
    public func servesAsWritten(revision: Int64) -> Bool {
        history.index(writing: revision) == targetIndex
    }

    /// `changeSet` as the served version has it; a change set without a revision (a conflict's
    /// current rows) is read as written in the newest version.
    ///
    /// - Throws: ``SyncStoreError`` `schemaMismatch` when a row lacks a field of its own version.
    public func project(_ changeSet: ChangeSet) throws(SyncStoreError) -> ChangeSet {
        let written = changeSet.revision.map(history.index(writing:)) ?? history.versions.count - 1
        var projected = changeSet
        projected.changes = []
        for var changes in changeSet.changes where slots[changes.type] != nil {
            for (key, attributes) in changes.attributes {
                changes.attributes[key] = try project(
                    attributes, of: changes.type, writtenIn: written, row: key, revision: changeSet.revision)
            }
            projected.changes.append(changes)
        }
        return projected.canonical(in: target.schema)
    }

    /// The attributes of one row of `type`, logged at `revision`, as the served version has them;
    /// `revision` and `__oldId__` are kept.
    package func project(
        _ attributes: [String: JSONValue], of type: String, writtenIn revision: Int64, row key: String
    ) throws(SyncStoreError) -> [String: JSONValue] {
        try project(attributes, of: type, writtenIn: history.index(writing: revision), row: key, revision: revision)
    }

    /// The attributes of one row of `type`, written in the version at index `written`, as the
    /// served version has them; `revision` and `__oldId__` are kept.
    func project(
        _ attributes: [String: JSONValue], of type: String, writtenIn written: Int, row key: String, revision: Int64?
    ) throws(SyncStoreError) -> [String: JSONValue] {
        var projected = [String: JSONValue](minimumCapacity: (slots[type]?.count ?? 0) + 1)
        for slot in slots[type] ?? [] {
            projected[slot.name] = try value(of: slot, in: attributes, writtenIn: written, type: type, row: key)
        }
        for member in [SchemaNames.revisionColumn, SchemaNames.oldIDAttribute] {
            if let value = attributes[member] { projected[member] = value }
        }
        return projected
    }

    /// The value of `slot`'s field in a row's members, or its absent value when the row was written
    /// without it.
    private func value(
        of slot: Slot, in members: [String: JSONValue], writtenIn written: Int, type: String, row key: String
    ) throws(SyncStoreError) -> JSONValue {
        for name in slot.lineage.names {
            if let value = members[name] { return value }
        }
        // Absent from a row written in a version that has the field: explained only when a later
        // version dropped it (the column went before the upgrade that says so).
        guard !slot.lineage.isPresent(in: written) || !slot.lineage.isPresent(in: history.versions.count - 1) else {
            throw .schemaMismatch(
                "\(type)[\(key.clippedForMessage)] has no value for \(slot.lineage.fields[written]!.name), which its version \(history.versions[written].number) has (a column dropped, renamed or retyped before the schema was upgraded): upgrade the schema, or if the change was undone, mend the log (seed-server schema repair-log)"
            )
        }
        return slot.lineage.absentValue(writtenIn: written)
    }

    /// A snapshot page read in the newest version, as the served version has it.
    public func project(_ page: SnapshotPage) throws(SyncStoreError) -> SnapshotPage {
        guard !isNewest else { return page }
        guard let type = target.schema.type(named: page.type), let slots = slots[page.type] else {
            throw .unknownType(page.type)
        }
        let newest = history.versions.count - 1
        let position = Dictionary(page.columns.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
        let sources: [Int?] = slots.map { slot in slot.lineage.names.lazy.compactMap { position[$0] }.first }
        var projected = page
        projected.columns = type.columnNames
        projected.rows = try page.rows.map { (row) throws(SyncStoreError) -> [JSONValue] in
            var values = [row[0]]
            for (slot, source) in zip(slots, sources) {
                if let source {
                    values.append(row[source])
                } else if slot.lineage.isPresent(in: newest) {
                    throw .schemaMismatch("a page of \(page.type) has no column \(slot.name)")
                } else {
                    values.append(slot.lineage.absentValue(writtenIn: newest))
                }
            }
            values.append(row[row.count - 1])
            return values
        }
        return projected
    }

    /// ``project(_:)-(SnapshotPage)``, then ``SnapshotPage/selecting(_:)`` when `fields` are given.
    package func project(_ page: SnapshotPage, selecting fields: [String]?) throws(SyncStoreError) -> SnapshotPage {
        let projected = try project(page)
        return try fields.map { (fields) throws(SyncStoreError) in try projected.selecting(fields) } ?? projected
    }

    /// The schema answer of the served version: its types, and row counts for them alone.
    public func project(_ info: SchemaInfo) -> SchemaInfo {
        var projected = info
        projected.dataset = target.schema.dataset
        projected.schemaVersion = target.number
        projected.types = target.schema.types
        projected.rowCounts = info.rowCounts?.filter { slots[$0.key] != nil }
        projected.versions = history.versions.map {
            SchemaInfo.KeptVersion(
                schemaVersion: $0.number, revision: $0.revision, renames: $0.renames.isEmpty ? nil : $0.renames)
        }
        return projected
    }
}

extension VersionProjection {
    /// Where a field of the served version is in the newest: the column that holds it there, or,
    /// for a field the newest version dropped, the value every row has for it.
    package enum NewestSource: Sendable, Hashable {
        case column(String)
        case absent(JSONValue)
    }

    /// Where each of `fields` of `type` (names of the served version) is in the newest version,
    /// in the order given.
    ///
    /// - Throws: ``SyncStoreError`` `unknownType` or `unknownField` for a name the served version
    ///   does not have.
    package func newestSources(of type: String, fields: [String]) throws(SyncStoreError)
        -> [(field: Field, source: NewestSource)]
    {
        guard let entity = target.schema.type(named: type), let slots = slots[type] else { throw .unknownType(type) }
        let newest = history.versions.count - 1
        return try fields.map { (name) throws(SyncStoreError) in
            guard let slot = slots.first(where: { $0.name == name }), let field = entity.field(named: name) else {
                throw .unknownField(name, type: type)
            }
            guard slot.lineage.isPresent(in: newest) else {
                return (field, .absent(slot.lineage.absentValue(writtenIn: newest)))
            }
            return (field, .column(slot.lineage.fields[newest]!.name))
        }
    }
}

extension VersionProjection {
    /// The fields of the newest version the served version does not have, by type: the fields a
    /// client of this version cannot write. A row it creates takes their default; a store whose
    /// tables have defaults of their own (PostgreSQL) lets the column's default fill them.
    package func fieldsUnknown() -> [String: Set<String>] {
        let newest = history.versions.count - 1
        guard targetIndex != newest else { return [:] }
        var unknown: [String: Set<String>] = [:]
        for type in history.newest.schema.types {
            let names = (lineages[type.name] ?? []).filter {
                $0.isPresent(in: newest) && !$0.isPresent(in: targetIndex)
            }
            .map { $0.fields[newest]!.name }
            if !names.isEmpty { unknown[type.name] = Set(names) }
        }
        return unknown
    }

    /// A change set a client of the served version pushed, as the newest version has it: fields
    /// under their newest names, fields the newest version dropped left out, and fields the client
    /// does not know filled in: a created row takes their default (or `null`), an updated row keeps
    /// the values `current` reads (a partial update). Call it where the store's write holds its
    /// lock, so `current` reads what the write will change.
    ///
    /// - Parameter current: the stored row of a type and key, by newest field names, or `nil` when
    ///   there is none (the conflict check then answers for it).
    /// - Throws: ``ChangeSetError`` when the change set does not fit the served version (checked
    ///   first, so its errors name the fields the client knows), and what `current` throws.
    package func newest(
        _ pushed: PushedChangeSet, current: (EntityType, JSONValue) throws -> [String: JSONValue]?
    ) throws -> PushedChangeSet {
        guard !isNewest else { return pushed }
        _ = try target.schema.validatePush(pushed)
        let newestIndex = history.versions.count - 1
        var translated = pushed
        for index in translated.changeSet.changes.indices {
            let changes = translated.changeSet.changes[index]
            guard let type = history.newest.schema.type(named: changes.type) else { continue }
            // The served version's name of each field the newest version still has, to its newest name.
            var names: [String: String] = [:]
            for slot in slots[type.name] ?? [] where slot.lineage.isPresent(in: newestIndex) {
                names[slot.name] = slot.lineage.fields[newestIndex]!.name
            }
            let known = Set(names.values)
            let updated = Set(changes.update.compactMap(\.keyString))
            let deleted = Set(changes.delete.compactMap(\.keyString))
            for (key, attributes) in changes.attributes where !deleted.contains(key) {
                var row = [String: JSONValue]()
                for (name, value) in attributes {
                    if let newName = names[name] { row[newName] = value }
                }
                row[SchemaNames.revisionColumn] = attributes[SchemaNames.revisionColumn]
                let stored =
                    try updated.contains(key)
                    ? type.primaryKey.type.key(from: key).flatMap { try current(type, $0) } : nil
                for field in type.fields where !known.contains(field.name) {
                    row[field.name] = stored?[field.name] ?? field.absentValue
                }
                translated.changeSet.changes[index].attributes[key] = row
            }
        }
        return translated
    }
}
