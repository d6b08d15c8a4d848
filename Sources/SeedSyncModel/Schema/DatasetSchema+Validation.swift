import Foundation

extension DatasetSchema {
    /// The most types a schema may declare.
    public static let maximumTypes = 500
    /// The most fields a type may have besides its key: a table then has at most 1,002 columns
    /// (key and revision), within SQLite's 2,000 and PostgreSQL's 1,600.
    public static let maximumFields = 1000
    /// The most bytes a field's default may take as JSON: it is written into every row that lacks
    /// the field.
    public static let maximumDefaultBytes = 4096
    /// The most bytes a schema may take as JSON: every server keeps each version in memory, and
    /// `GET /v1/schema` sends one whole.
    public static let maximumSchemaBytes = 1 << 20

    /// Checks the rules every schema must follow before a store is created from it.
    ///
    /// Names match `^[a-z][a-z0-9_]{0,62}$`, type names do not start with `sqlite_`, are not
    /// members of a change set (`types`, `revision`, `conflict`, `id`) and are not the name of a
    /// reference's index (`<type>_<field>_index`, see docs/SEED-FORMAT.md), no field is called
    /// `revision`, names are unique, every reference names a type of this schema whose primary key
    /// has the field's type, a default fits its field's type (text without U+0000), and the schema
    /// keeps within ``maximumTypes``, ``maximumFields``, ``maximumDefaultBytes`` and
    /// ``maximumSchemaBytes``.
    ///
    /// - Throws: ``SchemaError`` naming the first rule broken.
    public func validate() throws {
        try validate(after: nil)
    }

    /// ``validate()`` for a new version of a store whose newest version is `current`: a type of
    /// `current` named like a change-set member (allowed before the rule) keeps its name, and no
    /// new type takes the name of an index `current` has. Every way a schema enters a store
    /// (`init --schema`, `--attach`, an upgrade from a file or from the tables) comes through here.
    ///
    /// - Throws: ``SchemaError`` naming the first rule broken.
    public func validate(after current: DatasetSchema?) throws {
        try validateLimits()  // first: a schema of 200,000 types is refused at once
        try validateShape(reservedAllowed: Set(current?.types.map(\.name) ?? []))
        let indexes = Set((current?.types ?? []).flatMap(\.indexNames) + types.flatMap(\.indexNames))
        if let type = types.first(where: { indexes.contains($0.name) }) {
            throw SchemaError(
                .reservedName,
                "type name '\(type.name)' is the name of the index SeedSync keeps for a reference (<type>_<field>_index); choose another"
            )
        }
    }

    /// The rules of ``validate()`` but the limits, for a schema already in use (in a seed, from a
    /// server, a stored version): a type named like a change-set member was allowed before the
    /// rule, and a dataset that is only read works with it (only its writes cannot be expressed).
    package func validate(allowingReservedTypeNames: Bool) throws {
        try validateShape(reservedAllowed: allowingReservedTypeNames ? nil : [])
    }

    /// Names, references and defaults; a reserved type name passes when `reservedAllowed` holds
    /// it, or is `nil`.
    private func validateShape(reservedAllowed: Set<String>?) throws {
        guard SchemaNames.isValidDataset(dataset) else {
            throw SchemaError(
                .invalidName,
                "dataset name '\(dataset.clippedForMessage)' must match ^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
        }
        guard schemaVersion >= 1 else {
            throw SchemaError(.invalidVersion, "schemaVersion must be 1 or more, not \(schemaVersion)")
        }
        guard !types.isEmpty else { throw SchemaError(.noTypes, "the schema declares no types") }
        var typeNames = Set<String>()
        for type in types {
            try type.validateNames(allowingReserved: reservedAllowed.map { $0.contains(type.name) } ?? true)
            guard typeNames.insert(type.name).inserted else {
                throw SchemaError(.duplicateName, "type '\(type.name)' is declared twice")
            }
        }
        for type in types {
            for field in type.fields {
                try validateReference(of: field, in: type)
                try validateDefault(of: field, in: type)
            }
        }
        try validateScopes()
    }

    /// The counts and sizes of ``validate()``, checked before anything is written.
    private func validateLimits() throws {
        guard types.count <= Self.maximumTypes else {
            throw SchemaError(
                .tooLarge,
                "the schema declares \(types.count) types, more than the \(Self.maximumTypes) a dataset may have")
        }
        for type in types where type.fields.count > Self.maximumFields {
            throw SchemaError(
                .tooLarge,
                "type \(type.name) has \(type.fields.count) fields, more than the \(Self.maximumFields) a type may have; split it into types that reference each other"
            )
        }
        for type in types {
            for field in type.fields {
                guard let value = field.default, let bytes = try? JSONEncoder().encode(value) else { continue }
                guard bytes.count <= Self.maximumDefaultBytes else {
                    throw SchemaError(
                        .tooLarge,
                        "the default of \(type.name).\(field.name) takes \(bytes.count) bytes, more than the \(Self.maximumDefaultBytes) a default may; choose a shorter one, or none"
                    )
                }
            }
        }
        let size = (try? JSONEncoder.stable().encode(self).count) ?? 0
        guard size <= Self.maximumSchemaBytes else {
            throw SchemaError(
                .tooLarge,
                "the schema takes \(size) bytes as JSON, more than the \(Self.maximumSchemaBytes) a schema may")
        }
    }

    private func validateDefault(of field: Field, in type: EntityType) throws {
        guard let value = field.default else { return }
        guard field.references == nil else {
            throw SchemaError(
                .invalidDefault,
                "field \(type.name).\(field.name) references \(field.references!) and cannot have a default; make it nullable"
            )
        }
        guard !value.holdsNUL else {
            throw SchemaError(
                .invalidDefault, "the default of \(type.name).\(field.name) holds U+0000 (NUL), which no text may hold")
        }
        guard field.type.normalize(value) == value else {
            throw SchemaError(
                .invalidDefault,
                "the default of \(type.name).\(field.name) is not \(field.type.expectation) in canonical form")
        }
    }

    private func validateReference(of field: Field, in type: EntityType) throws {
        guard let target = field.references else { return }
        guard let targetType = self.type(named: target) else {
            throw SchemaError(.invalidReference, "field \(type.name).\(field.name) references unknown type '\(target)'")
        }
        guard field.type == targetType.primaryKey.type.fieldType else {
            throw SchemaError(
                .invalidReference,
                "field \(type.name).\(field.name) is \(field.type.rawValue) but references \(target), whose key is \(targetType.primaryKey.type.rawValue)"
            )
        }
    }
}

extension EntityType {
    /// The names of the indexes SeedSync keeps for this type's references: `<type>_<field>_index`.
    package var indexNames: [String] {
        fields.filter { $0.references != nil }.map { "\(name)_\($0.name)_index" }
    }

    fileprivate func validateNames(allowingReserved: Bool) throws {
        guard SchemaNames.isValid(name) else {
            throw SchemaError(.invalidName, "type name '\(name.clippedForMessage)' must match ^[a-z][a-z0-9_]{0,62}$")
        }
        guard !name.hasPrefix("sqlite_") else {
            throw SchemaError(.invalidName, "type name '\(name)' must not start with sqlite_")
        }
        guard allowingReserved || !SchemaNames.changeSetMembers.contains(name) else {
            throw SchemaError(.reservedName, "type name '\(name)' is reserved: a change set has a member of that name")
        }
        var seen = Set<String>()
        for column in [primaryKey.name] + fields.map(\.name) {
            guard SchemaNames.isValid(column) else {
                throw SchemaError(
                    .invalidName, "field name '\(name).\(column.clippedForMessage)' must match ^[a-z][a-z0-9_]{0,62}$")
            }
            guard column != SchemaNames.revisionColumn else {
                throw SchemaError(
                    .reservedName, "'\(name).revision' is reserved: every type carries its own revision column")
            }
            guard seen.insert(column).inserted else {
                throw SchemaError(.duplicateName, "field '\(name).\(column)' is declared twice")
            }
        }
    }
}

/// A schema that breaks one of the rules of ``DatasetSchema/validate()``.
public struct SchemaError: Error, CustomStringConvertible, Sendable {
    /// Which rule is broken. New codes may be added: a `switch` over it needs a `default`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case invalidName, reservedName, duplicateName, invalidVersion, noTypes, invalidReference, invalidDefault
            case tooLarge, invalidScope
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// A dataset, type or field name does not match its pattern.
        public static let invalidName = Code(.invalidName)
        /// A name is reserved: a field called `revision` (every type carries its own), a type named
        /// like a change-set member or like the index of a reference.
        public static let reservedName = Code(.reservedName)
        /// A type, or a field of one type, is declared twice.
        public static let duplicateName = Code(.duplicateName)
        /// The schema version is below 1.
        public static let invalidVersion = Code(.invalidVersion)
        /// The schema declares no types.
        public static let noTypes = Code(.noTypes)
        /// A reference names no type of the schema, or one whose key has another type.
        public static let invalidReference = Code(.invalidReference)
        /// A field's default does not fit its type, holds U+0000, or the field is a reference.
        public static let invalidDefault = Code(.invalidDefault)
        /// The schema has more types, fields or bytes than ``DatasetSchema/maximumTypes``,
        /// ``DatasetSchema/maximumFields``, ``DatasetSchema/maximumDefaultBytes`` or
        /// ``DatasetSchema/maximumSchemaBytes`` allow.
        public static let tooLarge = Code(.tooLarge)
        /// A scoped type names no key or non-nullable field of the scope's type, the schema
        /// declares no scope, or a shared type references a scoped one (see ``ScopeDeclaration``).
        public static let invalidScope = Code(.invalidScope)

        public var description: String { base.rawValue }
    }

    public let code: Code
    public let description: String

    public init(_ code: Code, _ description: String) {
        self.code = code
        self.description = "invalid schema: " + description
    }
}
