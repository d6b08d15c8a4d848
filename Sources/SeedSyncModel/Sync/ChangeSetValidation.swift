/// A row to write: its key and its field values in schema order, already normalized.
public struct RowValues: Sendable, Hashable {
    public var key: JSONValue
    public var values: [JSONValue]

    public init(key: JSONValue, values: [JSONValue]) {
        self.key = key
        self.values = values
    }
}

/// The changes of one type after they matched the schema: safe to hand to storage.
package struct ValidatedChanges: Sendable {
    package let type: EntityType
    package let creates: [RowValues]
    package let updates: [RowValues]
    package let deletes: [JSONValue]
}

extension DatasetSchema {
    /// The largest integer key a row may be created with by a commit (or have in a table a
    /// store attaches): 2^62 − 1. The keys above are left for the rows apps push, which take keys
    /// after the largest one used or ever given: a row at `Int64.max` would leave them none, for good.
    package static let largestCommittedKey: Int64 = (1 << 62) - 1

    /// The integer keys a row may be created with by a commit or a bulk load, or have in a table a
    /// store attaches: 0 to ``largestCommittedKey``. Negative keys are the apps' own: a row an app
    /// creates has one until its push gives it a real key.
    package static let committedKeys: ClosedRange<Int64> = 0...largestCommittedKey

    /// ``validate(_:)`` for a store's commit: a change set that does not fit is
    /// `SyncStoreError` `invalidChangeSet`, the store's error for it. An integer key outside
    /// ``committedKeys`` cannot be created.
    package func validateCommit(_ changeSet: ChangeSet) throws(SyncStoreError) -> [ValidatedChanges] {
        let changes: [ValidatedChanges]
        do {
            changes = try validate(changeSet)
        } catch {
            throw .invalidChangeSet(error)
        }
        for change in changes where change.type.primaryKey.type == .integer {
            if let row = change.creates.first(where: { !Self.committedKeys.contains($0.key.intValue ?? 0) }) {
                throw .invalidChangeSet(.keyOutOfRange(change.type.name, row.key.intValue!))
            }
        }
        do {
            try Self.refuseNUL(in: changes)
        } catch {
            throw .invalidChangeSet(error)
        }
        return changes
    }

    /// Refuses U+0000 (NUL) in the text a commit or a push writes: text keys and values, and the
    /// strings inside `json` values. PostgreSQL cannot store it, and both stores take the same change
    /// sets. (What a store already holds is still read and served.)
    ///
    /// - Throws: ``ChangeSetError`` `invalidValue` naming the row and the field.
    package static func refuseNUL(in changes: [ValidatedChanges]) throws(ChangeSetError) {
        for change in changes {
            for row in change.creates + change.updates {
                let name = "\(change.type.name)[\((row.key.keyString ?? "?").clippedForMessage)]"
                if row.key.holdsNUL { throw ChangeSetError(.invalidKey, "\(name): a key cannot hold U+0000 (NUL)") }
                for (field, value) in zip(change.type.fields, row.values) where value.holdsNUL {
                    throw ChangeSetError(.invalidValue, "\(name).\(field.name): text cannot hold U+0000 (NUL)")
                }
            }
        }
    }

    /// Checks a change set against this schema and returns its rows in schema order.
    ///
    /// Every type must be declared once, every id must fit the primary key and appear in only one
    /// of `create`, `update` and `delete`, every created or updated row must carry attributes that
    /// name known fields with values of the right type and leave no non-null field out. A
    /// `revision` attribute is ignored (the server assigns revisions), and a primary-key attribute
    /// must equal the id. Whether rows exist, and references resolve, is for storage to check.
    ///
    /// ```swift
    /// let changes = try schema.validate(changeSet)
    /// ```
    ///
    /// - Throws: ``ChangeSetError`` naming the first problem, as `type[id].field: …`.
    package func validate(_ changeSet: ChangeSet) throws(ChangeSetError) -> [ValidatedChanges] {
        guard !changeSet.changes.isEmpty else { throw ChangeSetError(.malformed, "the change set has no types") }
        var seen = Set<String>()
        return try changeSet.changes.map { (changes) throws(ChangeSetError) -> ValidatedChanges in
            guard let type = self.type(named: changes.type) else {
                throw ChangeSetError(.unknownType, "unknown type '\(changes.type.clippedForMessage)'")
            }
            guard seen.insert(type.name).inserted else {
                throw ChangeSetError(.malformed, "type '\(type.name)' appears twice")
            }
            return try type.validate(changes)
        }
    }
}

extension EntityType {
    fileprivate func validate(_ changes: TypeChanges) throws(ChangeSetError) -> ValidatedChanges {
        var keys = Set<String>()
        for id in changes.create + changes.update + changes.delete {
            guard primaryKey.type.accepts(id), let key = id.keyString else {
                throw ChangeSetError(
                    .invalidKey, "\(name): id \(describe(id)) is not a valid \(primaryKey.type.rawValue) key")
            }
            guard keys.insert(key).inserted else {
                throw ChangeSetError(.malformed, "\(rowName(key)) appears more than once in create, update and delete")
            }
        }
        // Every id is unique, so attributes for each created or updated row, and no more, means
        // as many attribute rows as such ids, each of them one of those ids (checked in `row`).
        if changes.attributes.count != changes.create.count + changes.update.count {
            let written = Set((changes.create + changes.update).compactMap(\.keyString))
            if let stray = changes.attributes.keys.sorted().first(where: { !written.contains($0) }) {
                throw ChangeSetError(.malformed, "\(rowName(stray)) has attributes but is not created or updated")
            }
        }
        return ValidatedChanges(
            type: self,
            creates: try changes.create.map { (id) throws(ChangeSetError) in try row(id, changes.attributes) },
            updates: try changes.update.map { (id) throws(ChangeSetError) in try row(id, changes.attributes) },
            deletes: changes.delete
        )
    }

    fileprivate func row(_ id: JSONValue, _ attributes: [String: [String: JSONValue]]) throws(ChangeSetError)
        -> RowValues
    {
        let key = id.keyString!
        guard let given = attributes[key] else { throw ChangeSetError(.malformed, "\(rowName(key)) has no attributes") }
        let isUnexpected = { (attribute: String) in
            attribute != SchemaNames.revisionColumn && self.field(named: attribute) == nil
                && (attribute != self.primaryKey.name || given[attribute] != id)
        }
        // Sorted only to name the same attribute every time when there is one to name.
        if given.keys.contains(where: isUnexpected), let attribute = given.keys.sorted().first(where: isUnexpected) {
            throw ChangeSetError(
                .unknownField,
                attribute == primaryKey.name
                    ? "\(rowName(key)).\(attribute) differs from the id"
                    : "\(rowName(key)): unknown field '\(attribute.clippedForMessage)'"
            )
        }
        let values = try fields.map { (field) throws(ChangeSetError) -> JSONValue in
            try value(of: field, given[field.name], rowKey: key)
        }
        return RowValues(key: id, values: values)
    }

    private func value(of field: Field, _ given: JSONValue?, rowKey: String) throws(ChangeSetError) -> JSONValue {
        let value = given ?? .null
        if value == .null {
            guard field.nullable else {
                throw ChangeSetError(
                    .invalidValue, "\(rowName(rowKey)).\(field.name) is missing or null but the field is not nullable")
            }
            return .null
        }
        guard let normalized = field.type.normalize(value) else {
            throw ChangeSetError(
                .invalidValue,
                "\(rowName(rowKey)).\(field.name): expected \(field.type.expectation), got \(value.kindName)")
        }
        return normalized
    }

    fileprivate func describe(_ id: JSONValue) -> String {
        id.keyString.map { "'\($0.clippedForMessage)'" } ?? id.kindName
    }

    /// A row as messages name it: `events[42]`, the key clipped.
    fileprivate func rowName(_ key: String) -> String {
        "\(name)[\(key.clippedForMessage)]"
    }
}

/// A change set that does not fit the schema or the stored data. Servers answer 422.
///
/// The description names the row (`events[7].title: …`), never a value of it.
public struct ChangeSetError: Error, CustomStringConvertible, Sendable, Hashable {
    /// What does not fit. New codes may be added: a `switch` over it needs a `default`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case malformed, unknownType, unknownField, invalidKey, invalidValue, brokenReference, rowExists, rowNotFound
            case refused, keysExhausted, outsideScope
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The change set breaks a rule of the protocol's shape: no types, a type or row listed
        /// twice, attributes missing or without a row, a pushed row without its base revision.
        public static let malformed = Code(.malformed)
        /// A type the schema does not have.
        public static let unknownType = Code(.unknownType)
        /// A field the type does not have, or a key field that differs from the row's id.
        public static let unknownField = Code(.unknownField)
        /// A key that is missing, of the wrong type, or a temporary key where none may be.
        public static let invalidKey = Code(.invalidKey)
        /// A value of the wrong type, or null where the field is not nullable.
        public static let invalidValue = Code(.invalidValue)
        /// A reference to a row that does not exist, or the delete of a row another references.
        public static let brokenReference = Code(.brokenReference)
        /// A created row exists already.
        public static let rowExists = Code(.rowExists)
        /// An updated or deleted row does not exist.
        public static let rowNotFound = Code(.rowNotFound)
        /// The database refused a value (a constraint of the table, such as a length or a check).
        public static let refused = Code(.refused)
        /// A pushed row needs a new integer key, and none is left above the largest ever used.
        public static let keysExhausted = Code(.keysExhausted)
        /// A pushed row would be created in, or moved to, a scope value the pusher's token does
        /// not grant (see ``ScopeGrant``).
        public static let outsideScope = Code(.outsideScope)

        public var description: String { base.rawValue }
    }

    public let code: Code
    public let description: String

    public init(_ code: Code, _ description: String) {
        self.code = code
        self.description = description
    }
}

extension EntityType {
    /// Checks one whole row, primary key included, as in a bulk-load file.
    ///
    /// ```swift
    /// let row = try events.validateRow(["id": 1, "title": "Gig", …])
    /// ```
    ///
    /// - Throws: ``ChangeSetError`` for a missing or invalid key, an unknown field or a bad value.
    public func validateRow(_ object: [String: JSONValue]) throws(ChangeSetError) -> RowValues {
        guard let id = object[primaryKey.name] else {
            throw ChangeSetError(.invalidKey, "\(name): the row has no '\(primaryKey.name)'")
        }
        guard primaryKey.type.accepts(id), let key = id.keyString else {
            throw ChangeSetError(
                .invalidKey, "\(name): id \(describe(id)) is not a valid \(primaryKey.type.rawValue) key")
        }
        return try row(id, [key: object])
    }
}

extension EntityType {
    /// Checks one row of a snapshot page whose columns are ``columnNames``: key, fields, revision.
    ///
    /// ```swift
    /// let (row, revision) = try events.validateSnapshotRow([1, "Gig", …, 17])
    /// ```
    ///
    /// - Throws: ``ChangeSetError`` for a row of the wrong length, an invalid key or revision, or a
    ///   value that does not fit its field.
    public func validateSnapshotRow(_ values: [JSONValue]) throws(ChangeSetError) -> (row: RowValues, revision: Int64) {
        guard values.count == fields.count + 2 else {
            throw ChangeSetError(.malformed, "\(name): a row has \(values.count) values, expected \(fields.count + 2)")
        }
        let id = values[0]
        guard primaryKey.type.accepts(id), let key = id.keyString else {
            throw ChangeSetError(
                .invalidKey, "\(name): id \(describe(id)) is not a valid \(primaryKey.type.rawValue) key")
        }
        guard case .int(let revision) = values[fields.count + 1], revision >= 0 else {
            throw ChangeSetError(.invalidValue, "\(rowName(key)).revision is not a non-negative integer")
        }
        var fieldValues: [JSONValue] = []
        fieldValues.reserveCapacity(fields.count)
        for (index, field) in fields.enumerated() {
            fieldValues.append(try value(of: field, values[index + 1], rowKey: key))
        }
        return (RowValues(key: id, values: fieldValues), revision)
    }
}

extension ChangeSetError {
    /// `type[key]` is outside ``DatasetSchema/committedKeys``: refused by a commit and a bulk load.
    package static func keyOutOfRange(_ type: String, _ key: Int64) -> Self {
        ChangeSetError(.invalidKey, "\(type)[\(key)] cannot be created: \(DatasetSchema.keyRangeReason(key))")
    }
}

extension DatasetSchema {
    /// Why `key`, outside ``committedKeys``, cannot be a stored row's key, and what to do.
    package static func keyRangeReason(_ key: Int64) -> String {
        key < 0
            ? "integer keys of stored rows are 0 or more, since apps give the rows they create negative keys until a push gives them real ones; give the row a key of 0 or more"
            : "integer keys end at \(largestCommittedKey) (2^62 − 1), so that the rows apps create always have keys to take; give the row a smaller key"
    }
}
