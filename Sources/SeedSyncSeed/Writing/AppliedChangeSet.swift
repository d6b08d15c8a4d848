public import SeedSyncModel

/// What one applied change set did, per type: the keys it created, updated and deleted, as the
/// change set names them. An app refreshes exactly these rows.
///
/// ```swift
/// for (type, keys) in applied.types {
///     print(type, keys.created.count, keys.updated.count, keys.deleted.count)
/// }
/// ```
public struct AppliedChangeSet: Sendable, Hashable {
    /// The keys of one type.
    public struct Keys: Sendable, Hashable {
        public var created: [JSONValue]
        public var updated: [JSONValue]
        public var deleted: [JSONValue]

        public init(created: [JSONValue] = [], updated: [JSONValue] = [], deleted: [JSONValue] = []) {
            self.created = created
            self.updated = updated
            self.deleted = deleted
        }
    }

    /// The revision the database is at once this change set is applied.
    public var revision: Int64
    /// The keys by type name; types the change set does not touch are absent.
    public var types: [String: Keys]

    public init(revision: Int64, types: [String: Keys]) {
        self.revision = revision
        self.types = types
    }

    /// Rows created, over every type.
    public var created: Int { types.values.reduce(0) { $0 + $1.created.count } }
    /// Rows updated, over every type.
    public var updated: Int { types.values.reduce(0) { $0 + $1.updated.count } }
    /// Rows deleted, over every type.
    public var deleted: Int { types.values.reduce(0) { $0 + $1.deleted.count } }
}
