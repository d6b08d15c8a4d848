public import SeedSyncModel

/// What one committed transaction did to the rows of one type, for ``SyncEngine/observe(type:)``.
public struct ObservedChanges: Sendable, Hashable {
    /// Keys of rows created, in the order they came.
    public var inserted: [JSONValue] = []
    /// Keys of rows changed.
    public var updated: [JSONValue] = []
    /// Keys of rows removed.
    public var deleted: [JSONValue] = []
    /// Temporary keys of rows the server gave real ones (a push applied), to the real ones.
    public var rekeyed: [JSONValue: JSONValue] = [:]
    /// Any row may have changed (the database was installed, replaced or migrated, or a refused
    /// push put rows back to the server's state): read the type again.
    public var isReload = false

    public init() {}
}

/// The state of one observed row, for ``SyncEngine/observe(type:key:editing:)``: its key (the real one
/// once a pushed row gets it) and its fields and `revision`, or `nil` once it is deleted.
public struct ObservedRow: Sendable, Hashable {
    public var key: JSONValue
    public var fields: [String: JSONValue]?

    public init(key: JSONValue, fields: [String: JSONValue]?) {
        self.key = key
        self.fields = fields
    }
}

/// A row a local write changed, and how.
struct RowChange: Sendable {
    enum Kind: Sendable { case inserted, updated, deleted }
    var row: RowID
    var kind: Kind
}
