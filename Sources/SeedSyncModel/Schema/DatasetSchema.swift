import Foundation

/// The shape of a dataset: its name, version and entity types.
///
/// It is the body of a schema file for `seed-server init --schema` and, with the revisions added,
/// the answer of `GET /v1/schema` (see ``SchemaInfo``).
///
/// ```swift
/// let schema = try JSONDecoder().decode(DatasetSchema.self, from: data)
/// try schema.validate()
/// ```
public struct DatasetSchema: Codable, Sendable, Hashable {
    /// The dataset's name, such as `demo`.
    public var dataset: String
    /// A version the dataset's owner raises whenever the types change.
    public var schemaVersion: Int
    /// The entity types, in the order they were declared.
    public var types: [EntityType]
    /// The scope that splits the dataset between teams, when it has one (see ``ScopeDeclaration``);
    /// absent, every reader reads every row.
    public var scope: ScopeDeclaration?

    public init(dataset: String, schemaVersion: Int, types: [EntityType], scope: ScopeDeclaration? = nil) {
        self.dataset = dataset
        self.schemaVersion = schemaVersion
        self.types = types
        self.scope = scope
    }

    /// The type called `name`, if the schema has one.
    public func type(named name: String) -> EntityType? {
        types.first { $0.name == name }
    }

    /// Every `(type, field)` pair whose field references the type called `target`.
    public func references(to target: String) -> [(type: EntityType, field: Field)] {
        types.flatMap { type in
            type.fields.filter { $0.references == target }.map { (type, $0) }
        }
    }
}

/// One entity type: a table of rows with a primary key and typed fields.
public struct EntityType: Codable, Sendable, Hashable {
    public var name: String
    public var primaryKey: PrimaryKey
    /// The fields besides the primary key, in column order.
    public var fields: [Field]
    /// The field (or the primary key) whose value is a row's scope value, for a scoped type;
    /// absent, the type is shared: every reader reads all its rows (see ``ScopeDeclaration``).
    public var scopedBy: String?

    public init(name: String, primaryKey: PrimaryKey, fields: [Field], scopedBy: String? = nil) {
        self.name = name
        self.primaryKey = primaryKey
        self.fields = fields
        self.scopedBy = scopedBy
    }

    /// The field called `name`, if the type has one.
    public func field(named name: String) -> Field? {
        fields.first { $0.name == name }
    }

    /// The column names of a snapshot page: primary key, fields, then `revision`.
    public var columnNames: [String] {
        [primaryKey.name] + fields.map(\.name) + [SchemaNames.revisionColumn]
    }
}

/// The primary key of an entity type.
public struct PrimaryKey: Codable, Sendable, Hashable {
    public var name: String
    public var type: KeyType

    public init(name: String, type: KeyType) {
        self.name = name
        self.type = type
    }
}

/// The types a primary key can have.
public enum KeyType: String, Codable, Sendable, Hashable {
    case integer
    case text

    /// The value type a field referencing a key of this type must have.
    public var fieldType: FieldType {
        switch self {
        case .integer: .integer
        case .text: .text
        }
    }
}

/// A typed field of an entity type.
public struct Field: Codable, Sendable, Hashable {
    public var name: String
    public var type: FieldType
    public var nullable: Bool
    /// The name of the entity type whose primary key this field holds, if it is a reference.
    public var references: String?
    /// The value a row has for this field when it was written without one: rows that existed
    /// before the field was added, and rows written after it was dropped, as clients of the
    /// versions that have it see them (see ``SchemaHistory``). Never `null`: a field that may be
    /// absent either has a default or is nullable.
    public var `default`: JSONValue?

    public init(
        name: String, type: FieldType, nullable: Bool = false, references: String? = nil, default: JSONValue? = nil
    ) {
        self.name = name
        self.type = type
        self.nullable = nullable
        self.references = references
        self.default = `default`
    }

    /// The value a row written without this field has for it: the default, else `null` (which
    /// only a nullable field may hold).
    public var absentValue: JSONValue { self.default ?? .null }

    private enum CodingKeys: String, CodingKey {
        case name, type, nullable, references, `default`
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        name = try container.decode(String.self, forKey: .name)
        type = try container.decode(FieldType.self, forKey: .type)
        nullable = try container.decodeIfPresent(Bool.self, forKey: .nullable) ?? false
        references = try container.decodeIfPresent(String.self, forKey: .references)
        // Read as the field's type has it: JSON writes the real 0.0 as `0`, which reads back as an
        // integer. A default that does not fit stays as it is, for `validate()` to refuse.
        let given = try container.decodeIfPresent(JSONValue.self, forKey: .default)
        self.default = given.flatMap { $0 == .null ? nil : type.normalize($0) ?? $0 }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try container.encode(type, forKey: .type)
        try container.encode(nullable, forKey: .nullable)
        try container.encodeIfPresent(references, forKey: .references)
        try container.encodeIfPresent(self.default, forKey: .default)
    }
}

/// The value types of fields.
///
/// | type | JSON | SQLite |
/// |---|---|---|
/// | `integer` | number without fraction, 64-bit | INTEGER |
/// | `real` | number | REAL |
/// | `text` | string | TEXT |
/// | `boolean` | `true` / `false` | INTEGER 0 / 1 |
/// | `timestamp` | RFC 3339 string | TEXT |
/// | `blob` | base64 string | BLOB |
/// | `json` | any JSON value (object, array, string, number, boolean) | TEXT holding the compact JSON |
public enum FieldType: String, Codable, Sendable, Hashable, CaseIterable {
    case integer, real, text, boolean, timestamp, blob, json
}

/// `GET /v1/schema`: the schema plus the revisions a client needs to decide how to sync.
public struct SchemaInfo: Codable, Sendable, Hashable {
    public var dataset: String
    public var schemaVersion: Int
    /// The newest committed revision.
    public var revision: Int64
    /// The oldest revision a client may sync from with `/v1/sync`.
    public var minRevision: Int64
    public var types: [EntityType]
    /// The dataset's scope, when it has one.
    public var scope: ScopeDeclaration?
    /// The scope values the reader's token grants, sorted, when the dataset has a scope and the
    /// token grants some values only (absent otherwise: every value). See ``ScopeDeclaration``.
    public var scopes: [JSONValue]?
    /// The number of rows of each type at ``revision``, when the server reports it (for progress
    /// and ETA; optional in protocol v1).
    public var rowCounts: [String: Int]?
    /// Every schema version the server serves, oldest first (absent from servers that predate
    /// versions, which serve one).
    public var versions: [KeptVersion]?

    public init(
        schema: DatasetSchema, revision: Int64, minRevision: Int64, rowCounts: [String: Int]? = nil,
        versions: [KeptVersion]? = nil
    ) {
        dataset = schema.dataset
        schemaVersion = schema.schemaVersion
        types = schema.types
        scope = schema.scope
        self.revision = revision
        self.minRevision = minRevision
        self.rowCounts = rowCounts
        self.versions = versions
    }

    /// The numbers of the versions served, oldest first: ``versions``, or this one alone.
    public var servedVersions: [Int] { versions?.map(\.schemaVersion) ?? [schemaVersion] }

    /// One version a server serves: its number, the revision it was made at and the fields it
    /// renamed (what a client needs to migrate its database to it, see `SchemaHistory/migration(from:to:renames:)`).
    public struct KeptVersion: Codable, Sendable, Hashable {
        public var schemaVersion: Int
        /// The store's revision when the version was made: change sets after it are written in it.
        public var revision: Int64
        /// The fields renamed from the version before (absent: none).
        public var renames: [FieldRename]?

        public init(schemaVersion: Int, revision: Int64, renames: [FieldRename]? = nil) {
            self.schemaVersion = schemaVersion
            self.revision = revision
            self.renames = renames
        }
    }

    /// The renames of every version after `old` up to and including `new`, oldest first, as this
    /// answer's ``versions`` list them.
    public func renames(after old: Int, through new: Int) -> [[FieldRename]] {
        (versions ?? []).filter { $0.schemaVersion > old && $0.schemaVersion <= new }.map { $0.renames ?? [] }
    }

    /// The schema without the revisions.
    public var schema: DatasetSchema {
        DatasetSchema(dataset: dataset, schemaVersion: schemaVersion, types: types, scope: scope)
    }
}
