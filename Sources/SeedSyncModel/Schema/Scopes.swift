package import Foundation

/// The scope that splits a dataset between teams: its name and the type of its values.
///
/// A schema declares at most one scope. Each type is then either **shared** (every reader reads
/// all its rows, as in a dataset without a scope) or **scoped** (``EntityType/scopedBy`` names the
/// field, or the primary key, whose value is the row's scope value). A token grants some scope
/// values (``ScopeGrant``) and reads the rows of those values and every shared row; it writes only
/// rows of those values.
///
/// ```json
/// {"dataset": "clubs", "schemaVersion": 1, "scope": {"name": "team", "type": "integer"},
///  "types": [{"name": "teams", "primaryKey": {"name": "id", "type": "integer"}, "fields": [], "scopedBy": "id"},
///            {"name": "events", "primaryKey": {"name": "id", "type": "integer"}, "scopedBy": "team_id",
///             "fields": [{"name": "team_id", "type": "integer", "nullable": false, "references": "teams"}]}]}
/// ```
///
/// A scoped type names its scope field itself (a column of its own), rather than taking it
/// through a reference: a row's scope is then read from the row alone, the same way by every
/// store, the capture and the client that drops a scope's rows, with no second copy of the rule
/// and no row that changes scope because another row moved. A reference between two scoped types
/// must stay inside one scope value, and a shared type may not reference a scoped one (its rows
/// would point at rows some readers cannot have).
public struct ScopeDeclaration: Codable, Sendable, Hashable {
    /// The scope's name, such as `team`.
    public var name: String
    /// The type of its values: `integer` or `text`.
    public var type: KeyType

    public init(name: String, type: KeyType) {
        self.name = name
        self.type = type
    }
}

/// The scope values a token may read and write: every one (static tokens, admin, a dataset
/// without a scope) or a set.
///
/// Values compare by their key form (``JSONValue/keyString``): `42` and `"42"` are one value, as
/// identity providers write numbers either way.
///
/// ```swift
/// let grant = ScopeGrant.only([.int(42), .int(43)])
/// grant.includes(.int(42))  // true
/// ```
public struct ScopeGrant: Sendable, Hashable, CustomStringConvertible {
    /// The granted values' key forms, or `nil` for every value.
    public let values: Set<String>?

    private init(values: Set<String>?) {
        self.values = values
    }

    /// Every scope value: the grant of static tokens.
    public static let all = ScopeGrant(values: nil)

    /// The values `granted` alone (values without a key form, such as `null`, grant nothing).
    public static func only(_ granted: some Sequence<JSONValue>) -> ScopeGrant {
        ScopeGrant(values: Set(granted.compactMap(\.keyString)))
    }

    /// Whether the grant covers every scope value.
    public var isAll: Bool { values == nil }

    /// Whether every value `other` grants, this grants too.
    public func isSubset(of other: ScopeGrant) -> Bool {
        guard let theirs = other.values else { return true }
        guard let values else { return false }
        return values.isSubset(of: theirs)
    }

    /// Whether a row of scope value `value` is inside the grant.
    public func includes(_ value: JSONValue) -> Bool {
        guard let values else { return true }
        return value.keyString.map(values.contains) ?? false
    }

    /// The granted values as `type` holds them, sorted (an integer scope drops values that are not
    /// integers): what a store binds in a query and an answer lists.
    public func sortedValues(as type: KeyType) -> [JSONValue]? {
        guard let values else { return nil }
        let typed: [JSONValue] =
            switch type {
            case .integer: values.compactMap { Int64($0).map(JSONValue.int) }
            case .text: values.map(JSONValue.string)
            }
        return typed.sorted(by: JSONValue.keyPrecedes)
    }

    public var description: String {
        guard let values else { return "every scope" }
        return values.sorted().joined(separator: ", ")
    }
}

extension EntityType {
    /// Whether the type is scoped (``scopedBy`` is set).
    public var isScoped: Bool { scopedBy != nil }

    /// The scope value of a row of this type with key `key` and field values `values` (in field
    /// order), or `nil` for a shared type.
    package func scopeValue(key: JSONValue, values: [JSONValue]) -> JSONValue? {
        guard let scopedBy else { return nil }
        if scopedBy == primaryKey.name { return key }
        return fields.firstIndex { $0.name == scopedBy }.map { values[$0] }
    }

    /// The scope value of a row from its attributes (field name to value), or `nil`.
    package func scopeValue(key: JSONValue, attributes: [String: JSONValue]) -> JSONValue? {
        guard let scopedBy else { return nil }
        return scopedBy == primaryKey.name ? key : attributes[scopedBy]
    }
}

extension DatasetSchema {
    /// The scope rules of ``validate()``: a scope only with a valid name and a key type, a scoped
    /// type only when the schema has a scope, naming its key or a non-nullable field of the
    /// scope's type that is not a reference to a shared type, and no shared type referencing a
    /// scoped one.
    func validateScopes() throws {
        if let scope, !SchemaNames.isValid(scope.name) {
            throw SchemaError(
                .invalidScope, "scope name '\(scope.name.clippedForMessage)' must match ^[a-z][a-z0-9_]{0,62}$")
        }
        for type in types {
            guard let scopedBy = type.scopedBy else { continue }
            guard let scope else {
                throw SchemaError(
                    .invalidScope, "type \(type.name) is scoped by \(scopedBy), but the schema declares no scope")
            }
            let valueType: FieldType
            if scopedBy == type.primaryKey.name {
                valueType = type.primaryKey.type.fieldType
            } else if let field = type.field(named: scopedBy), !field.nullable {
                valueType = field.type
            } else {
                throw SchemaError(
                    .invalidScope,
                    "type \(type.name) is scoped by '\(scopedBy.clippedForMessage)', which is neither its key nor a field that is not nullable"
                )
            }
            guard valueType == scope.type.fieldType else {
                throw SchemaError(
                    .invalidScope,
                    "\(type.name).\(scopedBy) is \(valueType.rawValue), but scope \(scope.name) holds \(scope.type.rawValue) values"
                )
            }
        }
        for type in types where !type.isScoped {
            for field in type.fields {
                guard let target = field.references, self.type(named: target)?.isScoped == true else { continue }
                throw SchemaError(
                    .invalidScope,
                    "shared type \(type.name) references scoped type \(target) through \(field.name): its rows would point at rows some readers cannot have; scope \(type.name) too, or drop the reference"
                )
            }
        }
    }

    /// The scoped types' names.
    package var scopedTypes: Set<String> { Set(types.filter(\.isScoped).map(\.name)) }
}

extension ChangeSet {
    /// The change set as a reader granted `grant` sees it, or `nil` when it shows that reader
    /// nothing (the revision is then a gap in its feed, not a loss).
    ///
    /// Shared types pass whole. A row of a scoped type is seen by its scope value, before the
    /// change (``TypeChanges/from``) and after (its attributes): created or updated inside the
    /// grant and before inside it too, it stays as it is; moved into the grant, it is a `create`
    /// with its attributes; moved out, a `delete`; deleted inside the grant, a `delete`. Nothing
    /// else of a scoped type passes, and `from` never does. A grant of every value sees the change
    /// set as it is.
    public func visible(to grant: ScopeGrant, in schema: DatasetSchema) -> ChangeSet? {
        guard !grant.isAll else { return self }
        var seen = self
        seen.changes = changes.compactMap { change in
            guard let type = schema.type(named: change.type), type.isScoped else { return change }
            return change.visible(to: grant, of: type)
        }
        return seen.changes.isEmpty ? nil : seen
    }
}

extension ChangeSet {
    /// What the change set touches, for an index of the log by scope value: whether it changes a
    /// shared type, and the scope values of the scoped rows it changes, before (`from`, a deleted
    /// row keyed by its scope) and after, each once. ``visible(to:in:)`` shows a reader something
    /// only when the change set touches a shared type or one of its values.
    package func touchedScopes(in schema: DatasetSchema) -> (shared: Bool, values: [JSONValue]) {
        var shared = false
        var values: [String: JSONValue] = [:]
        func add(_ value: JSONValue?) {
            if let value, let key = value.keyString { values[key] = value }
        }
        for change in changes {
            guard let type = schema.type(named: change.type), type.isScoped else {
                shared = true
                continue
            }
            for key in change.create + change.update {
                add(
                    key.keyString.flatMap { change.attributes[$0] }.flatMap {
                        type.scopeValue(key: key, attributes: $0)
                    })
            }
            for value in change.from.values { add(value) }
            if type.scopedBy == type.primaryKey.name { for key in change.delete { add(key) } }
        }
        return (shared, values.values.sorted(by: JSONValue.keyPrecedes))
    }
}

extension TypeChanges {
    /// ``ChangeSet/visible(to:in:)`` for the changes of scoped `type`, or `nil` when none is seen.
    fileprivate func visible(to grant: ScopeGrant, of type: EntityType) -> TypeChanges? {
        var seen = TypeChanges(type: self.type)
        func isInside(_ key: JSONValue) -> Bool {
            guard let id = key.keyString, let values = attributes[id] else { return false }
            return type.scopeValue(key: key, attributes: values).map(grant.includes) ?? false
        }
        func wasInside(_ key: JSONValue) -> Bool {
            // A row logged without `from` kept its scope value (or the key is its scope).
            guard let id = key.keyString else { return false }
            if let before = from[id] { return grant.includes(before) }
            return isInside(key)
        }
        for key in create where isInside(key) { seen.create.append(key) }
        for key in update {
            switch (wasInside(key), isInside(key)) {
            case (true, true): seen.update.append(key)
            case (false, true): seen.create.append(key)
            case (true, false): seen.delete.append(key)
            case (false, false): break
            }
        }
        for key in delete {
            let before = key.keyString.flatMap { from[$0] } ?? (type.scopedBy == type.primaryKey.name ? key : nil)
            if before.map(grant.includes) == true { seen.delete.append(key) }
        }
        for key in seen.create + seen.update {
            if let id = key.keyString { seen.attributes[id] = attributes[id] }
        }
        seen.create.sort(by: JSONValue.keyPrecedes)
        seen.delete.sort(by: JSONValue.keyPrecedes)
        return seen.create.isEmpty && seen.update.isEmpty && seen.delete.isEmpty ? nil : seen
    }
}

extension ValidatedPush {
    /// The first row the push writes into a scope value outside `grant` (a row it creates, or
    /// updates to another value), as the rejection's error; `nil` when every row stays inside.
    package func outsideScopeError(_ grant: ScopeGrant, scope: ScopeDeclaration?) -> ChangeSetError? {
        guard !grant.isAll, let scope else { return nil }
        for change in changes {
            for row in change.creates + change.updates {
                guard let value = change.type.scopeValue(key: row.key, values: row.values), !grant.includes(value)
                else { continue }
                return ChangeSetError(
                    .outsideScope,
                    "\(change.type.name)[\(row.key.keyString ?? "?")] would belong to \(scope.name) \(value.keyString ?? "?"), which this token does not grant; it may write rows of \(scope.name) \(grant) alone"
                )
            }
        }
        return nil
    }
}

/// A push's result as a store keeps it under the change set's id, with its writer's grant when
/// that grant is some scope values: a retry of the id is answered from it only for a writer
/// granted at least those values, so no writer reads another's result (its rows and keys) by
/// sending the same id. Another writer's id is answered `rejected`: ids are the clients' own
/// random choice, so only a guess or a replay reaches one.
package enum PushRecord {
    /// The bytes a store keeps for `result` of a writer granted `grant`.
    package static func encode(_ result: PushResult, grant: ScopeGrant) -> [UInt8] {
        guard let values = grant.values else { return result.jsonBytes() }
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("scopes")
        writer.value(.array(values.sorted().map(JSONValue.string)))
        writer.key("result")
        writer.rawValue(result.jsonBytes())
        writer.endObject()
        return writer.bytes
    }

    /// The answer to a retry of `id` by a writer granted `grant`, from the kept `bytes`.
    package static func answer(_ bytes: some ContiguousBytes, id: String, grant: ScopeGrant) throws -> PushResult {
        let kept = try JSONParser.parse(bytes)
        var writer = ScopeGrant.all
        var result = kept
        if case .object(let members) = kept, case .array(let scopes)? = members["scopes"], let inner = members["result"]
        {
            writer = .only(scopes)
            result = inner
        }
        guard writer.isSubset(of: grant) else {
            return PushResult(
                id: id,
                status: .rejected(
                    code: SyncStoreError.Code.invalidChangeSet.rawValue,
                    message:
                        "change set id \(id) was used by a writer of other scope values; push the change set under a new id"
                ))
        }
        return try PushResult(json: result)
    }
}

/// The scope values an address names, as its `scopes` query parameter (PROTOCOL.md §10): an
/// answer read for them is the same for every token that grants them all, so shared caches may
/// keep it under that address.
///
/// The parameter lists the values' key forms, sorted, each once, separated by commas; a `%` or
/// `,` inside a text value is written `%25` or `%2C` (before the address's own percent-encoding).
/// Only that one spelling is accepted, so every reader of the same values asks for the same
/// address.
///
/// ```swift
/// let list = ScopeList([.int(43), .int(42)])
/// list.parameter  // "42,43"
/// try ScopeList(parameter: "42,43", as: .integer) == list  // true
/// ```
public struct ScopeList: Sendable, Hashable, CustomStringConvertible {
    /// The values, sorted (integers by value, text by its UTF-8 bytes), each once.
    public let values: [JSONValue]

    /// The list of `values` (values without a key form, such as `null`, are left out).
    public init(_ values: some Sequence<JSONValue>) {
        var unique: [String: JSONValue] = [:]
        for value in values { if let key = value.keyString { unique[key] = value } }
        self.values = unique.values.sorted(by: JSONValue.keyPrecedes)
    }

    /// Parses the `scopes` parameter (percent-decoded once, as a server reads its query) of a
    /// scope whose values are of `type`.
    ///
    /// - Throws: ``SchemaError`` `invalidScope` saying what is wrong: a value that is not of the
    ///   type, or a list that is not in its one spelling.
    public init(parameter: String, as type: KeyType) throws {
        var values: [JSONValue] = []
        if !parameter.isEmpty {
            for part in parameter.split(separator: ",", omittingEmptySubsequences: false) {
                guard let text = String(part).removingPercentEncoding, let value = type.key(from: text) else {
                    throw SchemaError(
                        .invalidScope,
                        "'\(String(part).clippedForMessage)' is not a scope value of type \(type.rawValue)")
                }
                values.append(value)
            }
        }
        self.init(values)
        guard self.parameter == parameter else {
            throw SchemaError(
                .invalidScope,
                "scope values must be listed sorted, each once, as '\(self.parameter.clippedForMessage)'")
        }
    }

    /// The `scopes` parameter naming the values, before the address's own percent-encoding.
    public var parameter: String {
        values.compactMap(\.keyString).map { key in
            key.replacingOccurrences(of: "%", with: "%25").replacingOccurrences(of: ",", with: "%2C")
        }.joined(separator: ",")
    }

    /// The grant of these values alone.
    public var grant: ScopeGrant { .only(values) }

    public var description: String { values.compactMap(\.keyString).joined(separator: ", ") }
}
