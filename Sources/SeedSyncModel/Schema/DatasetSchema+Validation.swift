extension DatasetSchema {
    /// Checks the rules every schema must follow before a store is created from it.
    ///
    /// Names match `^[a-z][a-z0-9_]{0,62}$`, type names do not start with `sqlite_` and are not
    /// members of a change set (`types`, `revision`, `conflict`, `id`), no field is called `revision`,
    /// names are unique, and every reference names a type of this schema whose primary key has the
    /// field's type.
    ///
    /// - Throws: ``SchemaError`` naming the first rule broken.
    public func validate() throws {
        try validate(allowingReservedTypeNames: false)
    }

    /// ``validate()``, but for a schema already in use (in a seed, from a server): a type named
    /// like a change-set member was allowed before the rule, and a dataset that is only read works
    /// with it (only its writes cannot be expressed).
    package func validate(allowingReservedTypeNames: Bool) throws {
        guard SchemaNames.isValidDataset(dataset) else {
            throw SchemaError(.invalidName, "dataset name '\(dataset)' must match ^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
        }
        guard schemaVersion >= 1 else {
            throw SchemaError(.invalidVersion, "schemaVersion must be 1 or more, not \(schemaVersion)")
        }
        guard !types.isEmpty else { throw SchemaError(.noTypes, "the schema declares no types") }
        var typeNames = Set<String>()
        for type in types {
            try type.validateNames(allowingReserved: allowingReservedTypeNames)
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
    }

    private func validateDefault(of field: Field, in type: EntityType) throws {
        guard let value = field.default else { return }
        guard field.references == nil else {
            throw SchemaError(
                .invalidDefault,
                "field \(type.name).\(field.name) references \(field.references!) and cannot have a default; make it nullable"
            )
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
    fileprivate func validateNames(allowingReserved: Bool) throws {
        guard SchemaNames.isValid(name) else {
            throw SchemaError(.invalidName, "type name '\(name)' must match ^[a-z][a-z0-9_]{0,62}$")
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
                throw SchemaError(.invalidName, "field name '\(name).\(column)' must match ^[a-z][a-z0-9_]{0,62}$")
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
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// A dataset, type or field name does not match its pattern.
        public static let invalidName = Code(.invalidName)
        /// A field is called `revision`, which every type carries itself.
        public static let reservedName = Code(.reservedName)
        /// A type, or a field of one type, is declared twice.
        public static let duplicateName = Code(.duplicateName)
        /// The schema version is below 1.
        public static let invalidVersion = Code(.invalidVersion)
        /// The schema declares no types.
        public static let noTypes = Code(.noTypes)
        /// A reference names no type of the schema, or one whose key has another type.
        public static let invalidReference = Code(.invalidReference)
        /// A field's default does not fit its type, or the field is a reference.
        public static let invalidDefault = Code(.invalidDefault)

        public var description: String { base.rawValue }
    }

    public let code: Code
    public let description: String

    public init(_ code: Code, _ description: String) {
        self.code = code
        self.description = "invalid schema: " + description
    }
}
