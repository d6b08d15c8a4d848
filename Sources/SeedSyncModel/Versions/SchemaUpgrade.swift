extension SchemaHistory {
    /// The history with `schema` as its new newest version, made at `revision`, when every
    /// difference from the newest version is a change clients of older versions can be served
    /// through (see ``SchemaHistory``); renamed fields are stated in `renames`, never guessed.
    ///
    /// ```swift
    /// let upgrade = try history.upgrading(to: v2, renaming: [FieldRename(type: "events", from: "title", to: "name")], at: 120)
    /// ```
    ///
    /// - Throws: ``SchemaUpgradeError`` naming the first change that cannot be made this way and
    ///   what to do instead.
    public func upgrading(to schema: DatasetSchema, renaming renames: [FieldRename] = [], at revision: Int64)
        throws(SchemaUpgradeError) -> SchemaUpgrade
    {
        try upgrading(to: schema, renaming: renames, at: revision, asStored: false)
    }

    /// ``upgrading(to:renaming:at:)``; `asStored` for a version a store or a server already has,
    /// which was checked by the rules of its day (see ``DatasetSchema/validate(allowingReservedTypeNames:)``):
    /// a new version meets every rule of ``DatasetSchema/validate(after:)``.
    func upgrading(to schema: DatasetSchema, renaming renames: [FieldRename], at revision: Int64, asStored: Bool)
        throws(SchemaUpgradeError) -> SchemaUpgrade
    {
        let current = newest
        do {
            if asStored {
                try schema.validate(allowingReservedTypeNames: true)
            } else {
                try schema.validate(after: current.schema)
            }
        } catch {
            throw SchemaUpgradeError(.invalidSchema, "\(error)")
        }
        guard schema.dataset == current.schema.dataset else {
            throw SchemaUpgradeError(
                .otherDataset,
                "the new schema is for dataset '\(schema.dataset)', but the store serves '\(current.schema.dataset)'")
        }
        guard schema.schemaVersion > current.number else {
            throw SchemaUpgradeError(
                .versionNotRaised,
                "the new schema has schemaVersion \(schema.schemaVersion); it must be above the newest version, \(current.number)"
            )
        }
        guard revision >= current.revision else {
            throw SchemaUpgradeError(
                .invalidHistory,
                "version \(schema.schemaVersion) is made at revision \(revision), before version \(current.number)")
        }
        try checkScopes(of: schema, against: current.schema)
        var changes: [SchemaChange] = []
        for rename in renames
        where schema.type(named: rename.type) == nil || current.schema.type(named: rename.type) == nil {
            throw SchemaUpgradeError(
                .invalidRename, "\(rename) renames a field of \(rename.type), which is not a type of both versions")
        }
        for old in current.schema.types {
            guard let new = schema.type(named: old.name) else {
                throw SchemaUpgradeError(
                    .typeDropped,
                    "type \(old.name) is missing from the new schema: a type cannot be dropped, since clients of version \(current.number) still sync it; keep it (and delete its rows if they are no longer wanted)"
                )
            }
            changes += try fieldChanges(from: old, to: new, renames: renames.filter { $0.type == old.name })
        }
        for new in schema.types where current.schema.type(named: new.name) == nil {
            changes.append(.typeAdded(new.name))
        }
        guard !changes.isEmpty else {
            throw SchemaUpgradeError(
                .noChange,
                "the new schema is version \(current.number) under another number: there is nothing to upgrade")
        }
        var history = self
        let version = SchemaVersion(schema: schema, revision: revision, renames: renames)
        history.versions.append(version)
        return SchemaUpgrade(history: history, version: version, changes: changes)
    }

    /// The changes from `old` to `new`, one type in two versions; throws on a change that cannot be made.
    private func fieldChanges(from old: EntityType, to new: EntityType, renames: [FieldRename])
        throws(SchemaUpgradeError) -> [SchemaChange]
    {
        guard old.primaryKey == new.primaryKey else {
            throw SchemaUpgradeError(
                .keyChanged,
                "the key of \(old.name) changed from \(old.primaryKey.name) (\(old.primaryKey.type.rawValue)) to \(new.primaryKey.name) (\(new.primaryKey.type.rawValue)): a type's key cannot change; add a new type with the new key instead"
            )
        }
        for rename in renames where old.field(named: rename.from) == nil || new.field(named: rename.to) == nil {
            let missing =
                old.field(named: rename.from) == nil
                ? "\(old.name) has no field \(rename.from)" : "the new schema has no field \(old.name).\(rename.to)"
            throw SchemaUpgradeError(.invalidRename, "\(rename): \(missing)")
        }
        var changes: [SchemaChange] = []
        var matched = Set<String>()
        for field in old.fields {
            let rename = renames.first { $0.from == field.name }
            let name = rename?.to ?? field.name
            guard let kept = new.field(named: name) else {
                try checkDrop(of: field, in: old)
                changes.append(.fieldDropped(type: old.name, field: field.name))
                continue
            }
            if let rename {
                guard old.field(named: rename.to) == nil else {
                    throw SchemaUpgradeError(
                        .invalidRename,
                        "\(rename) gives \(old.name).\(field.name) the name of a field version \(newest.number) has; rename one field at a time, to a new name"
                    )
                }
                if lineages(of: old.name).contains(where: {
                    $0.names.contains(rename.to) && !$0.names.contains(field.name)
                }) {
                    throw SchemaUpgradeError(
                        .nameReused,
                        "\(rename) gives \(old.name).\(field.name) the name another field of \(old.name) had in an earlier version: stored rows and old clients know that name as the other field's. Choose another name"
                    )
                }
                changes.append(.fieldRenamed(type: old.name, from: field.name, to: rename.to))
            }
            try checkKept(field, as: kept, in: old)
            if field.default != kept.default { changes.append(.defaultChanged(type: old.name, field: kept.name)) }
            matched.insert(kept.name)
        }
        for field in new.fields where !matched.contains(field.name) {
            try checkAddition(of: field, to: new)
            changes.append(.fieldAdded(type: new.name, field: field.name))
        }
        return changes
    }

    private func checkDrop(of field: Field, in type: EntityType) throws(SchemaUpgradeError) {
        guard field.nullable || field.default != nil else {
            throw SchemaUpgradeError(
                .missingDefault,
                "\(type.name).\(field.name) is dropped, but it is not nullable and has no default: clients of version \(newest.number) need a value for it in rows written from now on. Give it a default first (an upgrade of its own), then drop it"
            )
        }
    }

    private func checkKept(_ field: Field, as kept: Field, in type: EntityType) throws(SchemaUpgradeError) {
        let name = "\(type.name).\(field.name)"
        guard field.type == kept.type else {
            throw SchemaUpgradeError(
                .fieldChanged,
                "\(name) changes type from \(field.type.rawValue) to \(kept.type.rawValue): a field's type cannot change; add a new field of the new type (and drop the old one)"
            )
        }
        guard field.nullable == kept.nullable else {
            throw SchemaUpgradeError(
                .fieldChanged,
                "\(name) changes from \(field.nullable ? "nullable" : "not nullable") to \(kept.nullable ? "nullable" : "not nullable"): clients of version \(newest.number) rely on it; add a new field instead"
            )
        }
        guard field.references == kept.references else {
            throw SchemaUpgradeError(
                .fieldChanged,
                "\(name) changes the type it references: a reference can only come with a new field; add a new nullable field that references \(kept.references ?? "the type")"
            )
        }
    }

    private func checkAddition(of field: Field, to type: EntityType) throws(SchemaUpgradeError) {
        let name = "\(type.name).\(field.name)"
        guard field.nullable || field.default != nil else {
            throw SchemaUpgradeError(
                .missingDefault,
                "\(name) is added, but it is not nullable and has no default: rows that exist now have no value for it. Make it nullable or give it a default"
            )
        }
        if lineages(of: type.name).contains(where: { $0.names.contains(field.name) }) {
            throw SchemaUpgradeError(
                .nameReused,
                "\(name) takes the name of a field \(type.name) had in an earlier version: stored rows and old clients know that name as the other field's. Choose another name"
            )
        }
    }
}

extension SchemaHistory {
    /// What takes a database of schema `old` straight to `new`, two versions of one history with
    /// any number between them: `renames` holds the renames of each version after `old` through
    /// `new`, oldest first, and are followed from name to name (a field renamed twice is one
    /// rename; one renamed and then dropped is dropped).
    ///
    /// ```swift
    /// let changes = try SchemaHistory.migration(from: v1, to: v3, renames: info.renames(after: 1, through: 3))
    /// ```
    ///
    /// - Returns: the changes; none when the versions differ in number alone.
    /// - Throws: ``SchemaUpgradeError`` when `new` cannot follow `old` (another dataset, a
    ///   dropped type): they are not two versions of one history.
    public static func migration(from old: DatasetSchema, to new: DatasetSchema, renames steps: [[FieldRename]])
        throws(SchemaUpgradeError) -> [SchemaChange]
    {
        var renames: [FieldRename] = []
        for type in old.types {
            for field in type.fields {
                var name = field.name
                for step in steps {
                    if let rename = step.first(where: { $0.type == type.name && $0.from == name }) { name = rename.to }
                }
                if name != field.name, new.type(named: type.name)?.field(named: name) != nil {
                    renames.append(FieldRename(type: type.name, from: field.name, to: name))
                }
            }
        }
        do {
            return try SchemaHistory(old).upgrading(to: new, renaming: renames, at: 0, asStored: true).changes
        } catch  where error.code == .noChange {
            return []
        }
    }
}

/// The outcome of ``SchemaHistory/upgrading(to:renaming:at:)``.
public struct SchemaUpgrade: Sendable, Hashable {
    /// The history with the new version.
    public var history: SchemaHistory
    /// The new version.
    public var version: SchemaVersion
    /// What changed from the previous version, in schema order.
    public var changes: [SchemaChange]
}

/// One change an upgrade makes. New cases may come: a `switch` over it needs a `default`.
public enum SchemaChange: Sendable, Hashable, CustomStringConvertible {
    case typeAdded(String)
    case fieldAdded(type: String, field: String)
    case fieldDropped(type: String, field: String)
    case fieldRenamed(type: String, from: String, to: String)
    case defaultChanged(type: String, field: String)

    public var description: String {
        switch self {
        case .typeAdded(let type): "type \(type) added"
        case .fieldAdded(let type, let field): "\(type).\(field) added"
        case .fieldDropped(let type, let field): "\(type).\(field) dropped"
        case .fieldRenamed(let type, let from, let to): "\(type).\(from) renamed to \(to)"
        case .defaultChanged(let type, let field): "\(type).\(field) default changed"
        }
    }
}

/// A schema change that cannot be made as an upgrade, with what to do instead.
public struct SchemaUpgradeError: Error, CustomStringConvertible, Sendable {
    /// Which rule the change breaks. New codes may be added: a `switch` over it needs a `default`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case invalidSchema, otherDataset, versionNotRaised, typeDropped, keyChanged, fieldChanged
            case missingDefault, nameReused, invalidRename, noChange, invalidHistory, scopeChanged
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The new schema breaks a rule of every schema (`SchemaError`).
        public static let invalidSchema = Code(.invalidSchema)
        /// The new schema names another dataset.
        public static let otherDataset = Code(.otherDataset)
        /// The new schema's `schemaVersion` is not above the newest version's.
        public static let versionNotRaised = Code(.versionNotRaised)
        /// A type of the newest version is missing.
        public static let typeDropped = Code(.typeDropped)
        /// A type's primary key changed.
        public static let keyChanged = Code(.keyChanged)
        /// A kept field changed its type, nullability or reference.
        public static let fieldChanged = Code(.fieldChanged)
        /// A field added or dropped can be absent from rows, but is not nullable and has no default.
        public static let missingDefault = Code(.missingDefault)
        /// A new field takes a name another field of its type had.
        public static let nameReused = Code(.nameReused)
        /// A stated rename names no field, or a field the new schema lacks.
        public static let invalidRename = Code(.invalidRename)
        /// The new schema changes nothing but its number.
        public static let noChange = Code(.noChange)
        /// A stored history breaks the rules (versions out of order).
        public static let invalidHistory = Code(.invalidHistory)
        /// The new version changes the scope, or the scope field of a kept type.
        public static let scopeChanged = Code(.scopeChanged)

        public var description: String { base.rawValue }
    }

    public let code: Code
    public let description: String
    /// The description without its lead-in: what is wrong.
    package let detail: String

    public init(_ code: Code, _ description: String) {
        self.code = code
        self.detail = description
        self.description = "schema upgrade refused: " + description
    }
}

extension SchemaHistory {
    /// A new version keeps the scope and each kept type's scope field: a row's scope value is read
    /// the same way by every version a client may hold, and a scope's rows never move because the
    /// schema changed. A new type may be scoped or shared.
    fileprivate func checkScopes(of schema: DatasetSchema, against current: DatasetSchema)
        throws(SchemaUpgradeError)
    {
        guard schema.scope == current.scope else {
            throw SchemaUpgradeError(
                .scopeChanged,
                "the new schema declares scope \(schema.scope.map { "\($0.name) (\($0.type.rawValue))" } ?? "none"), but the store's is \(current.scope.map { "\($0.name) (\($0.type.rawValue))" } ?? "none"): a scope cannot change between versions"
            )
        }
        for old in current.types {
            guard let new = schema.type(named: old.name), new.scopedBy != old.scopedBy else { continue }
            throw SchemaUpgradeError(
                .scopeChanged,
                "type \(old.name) is scoped by \(new.scopedBy ?? "nothing (shared)") in the new schema, but by \(old.scopedBy ?? "nothing (shared)") in version \(current.schemaVersion): a type keeps its scope field between versions"
            )
        }
    }
}
