import Foundation

/// The changes of one revision: for each entity type, the ids created, updated and deleted,
/// and the attributes of every created or updated row.
///
/// On the wire (protocol v1, after the sync case study):
///
/// ```json
/// {"revision": 18, "types": ["events"],
///  "events": {"create": [5], "update": [1], "delete": [2],
///             "attributes": {"5": {"title": "Gig", "revision": 18}, "1": {…}}}}
/// ```
///
/// `revision` is absent in a change set a writer submits; the server assigns it.
public struct ChangeSet: Sendable, Hashable {
    /// The revision this change set produces (r-1 → r), or `nil` before the server assigned one.
    public var revision: Int64?
    /// The changes per type, in the order of the `types` list.
    public var changes: [TypeChanges]
    /// Set in the answer to a pushed change set that conflicted: the server's current state of
    /// the rows it touched (`"conflict": true` on the wire, absent otherwise).
    public var conflict: Bool

    public init(revision: Int64? = nil, changes: [TypeChanges], conflict: Bool = false) {
        self.revision = revision
        self.changes = changes
        self.conflict = conflict
    }

    /// The names of the types this change set touches, in order.
    public var types: [String] { changes.map(\.type) }

    /// This change set without the changes of `types`: a client that keeps only some types drops
    /// the others but still moves to this revision.
    public func removingChanges(ofTypes types: Set<String>) -> ChangeSet {
        var kept = self
        kept.changes.removeAll { types.contains($0.type) }
        return kept
    }

    /// The changes of one type, if this change set touches it.
    public subscript(type: String) -> TypeChanges? {
        changes.first { $0.type == type }
    }
}

/// The changes of one entity type inside a ``ChangeSet``.
public struct TypeChanges: Sendable, Hashable {
    public var type: String
    public var create: [JSONValue]
    public var update: [JSONValue]
    public var delete: [JSONValue]
    /// Field values by the string form of the id (see ``JSONValue/keyString``), for every created
    /// and updated row.
    public var attributes: [String: [String: JSONValue]]
    /// For a scoped type, the scope value before the change of every deleted row and of every
    /// updated row whose scope value changed, by the string form of the id (`"from"` on the wire,
    /// absent when empty): what tells the readers of the old scope value that the row left them
    /// (see ``ChangeSet/visible(to:in:)``). Only the logs of scoped datasets carry it, and only a
    /// reader granted every scope value sees it.
    public var from: [String: JSONValue]

    public init(
        type: String,
        create: [JSONValue] = [],
        update: [JSONValue] = [],
        delete: [JSONValue] = [],
        attributes: [String: [String: JSONValue]] = [:],
        from: [String: JSONValue] = [:]
    ) {
        self.type = type
        self.create = create
        self.update = update
        self.delete = delete
        self.attributes = attributes
        self.from = from
    }
}

// MARK: - Codable

extension ChangeSet: JSONMessage {
    /// Reads a change set from parsed JSON.
    ///
    /// - Throws: ``JSONShapeError`` when a member is missing or of the wrong kind.
    public init(json: JSONValue) throws(JSONShapeError) {
        try self.init(json: json, at: "")
    }

    /// ``init(json:)`` for a change set at `path` of a larger document, which errors name (`changeSets[3]`).
    public init(json: JSONValue, at path: String) throws(JSONShapeError) {
        let members = try JSONMembers(json, at: path)
        revision = try members.int64IfPresent("revision")
        conflict = members.members["conflict"] == nil ? false : try members.bool("conflict")
        changes = try members.strings("types").map { (type) throws(JSONShapeError) in
            try TypeChanges(json: members.value(type), type: type, at: members.path(of: type))
        }
    }

    /// The change set as compact JSON, with a stable member order: `revision`, `conflict` when
    /// set, `types`, then one object per type with `create`, `update`, `delete` and `attributes`
    /// (ids in create, update, delete order, fields sorted by name).
    public func jsonBytes() -> [UInt8] {
        var writer = JSONWriter()
        writer.beginObject()
        writeMembers(to: &writer)
        writer.endObject()
        return writer.bytes
    }

    /// The members of ``jsonBytes()``, into an object `writer` has begun.
    func writeMembers(to writer: inout JSONWriter) {
        if let revision {
            writer.key("revision")
            writer.value(.int(revision))
        }
        if conflict {
            writer.key("conflict")
            writer.value(true)
        }
        // Each type once, even when a change set names one twice (which validation refuses): what is
        // written is always valid JSON, without a member twice.
        var written = Set<String>()
        let once = changes.filter { written.insert($0.type).inserted }
        writer.key("types")
        writer.value(.array(once.map { .string($0.type) }))
        for change in once {
            writer.key(change.type)
            change.write(to: &writer)
        }
    }
}

extension TypeChanges {
    /// Reads the changes of `type` from parsed JSON; absent lists are empty.
    init(json: JSONValue, type: String, at path: String) throws(JSONShapeError) {
        let members = try JSONMembers(json, at: path)
        self.type = type
        create = try members.arrayIfPresent("create")
        update = try members.arrayIfPresent("update")
        delete = try members.arrayIfPresent("delete")
        attributes = [:]
        from =
            try members.members["from"].map { (given) throws(JSONShapeError) in
                try JSONMembers(given, at: members.path(of: "from")).members
            } ?? [:]
        guard let given = members.members["attributes"], given != .null else { return }
        let rows = try JSONMembers(given, at: members.path(of: "attributes"))
        for (id, fields) in rows.members {
            attributes[id] = try JSONMembers(fields, at: rows.path(of: id)).members
        }
    }

    fileprivate func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("create")
        writer.value(.array(create))
        writer.key("update")
        writer.value(.array(update))
        writer.key("delete")
        writer.value(.array(delete))
        writer.key("attributes")
        writer.beginObject()
        // Once per key, even for a change set that names an id twice (which validation refuses):
        // what is written is always valid JSON.
        var written = Set<String>()
        for id in create + update + delete {
            guard let key = id.keyString, let fields = attributes[key], written.insert(key).inserted else { continue }
            writer.key(key)
            writer.value(.object(fields))
        }
        writer.endObject()
        if !from.isEmpty {
            writer.key("from")
            writer.beginObject()
            var written = Set<String>()
            for id in update + delete {
                guard let key = id.keyString, let value = from[key], written.insert(key).inserted else { continue }
                writer.key(key)
                writer.value(value)
            }
            writer.endObject()
        }
        writer.endObject()
    }
}

extension ChangeSet {
    /// The same changes in the order every store logs them: types in schema order, ids of each
    /// list by key (integers by value, text by UTF-8 bytes). Both stores serve this form, so the
    /// same history reads the same from either.
    package func canonical(in schema: DatasetSchema) -> ChangeSet {
        let order = Dictionary(uniqueKeysWithValues: schema.types.enumerated().map { ($1.name, $0) })
        var sorted = self
        sorted.changes.sort { (order[$0.type] ?? .max) < (order[$1.type] ?? .max) }
        for index in sorted.changes.indices {
            sorted.changes[index].create.sort(by: JSONValue.keyPrecedes)
            sorted.changes[index].update.sort(by: JSONValue.keyPrecedes)
            sorted.changes[index].delete.sort(by: JSONValue.keyPrecedes)
        }
        return sorted
    }
}

extension JSONValue {
    /// Key order: integers by value, strings by their UTF-8 bytes (SQLite's `BINARY` collation).
    package static func keyPrecedes(_ a: JSONValue, _ b: JSONValue) -> Bool {
        switch (a, b) {
        case (.int(let x), .int(let y)): x < y
        case (.string(let x), .string(let y)): x.utf8.lexicographicallyPrecedes(y.utf8)
        default: false
        }
    }
}
