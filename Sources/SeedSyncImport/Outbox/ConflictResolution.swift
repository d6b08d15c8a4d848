public import SeedSyncModel

/// A pending local edit of a row and a server change to the same row: the three versions a
/// ``ConflictResolution`` decides from.
///
/// Fields are by name, without `revision`; a version is `nil` where the row does not exist (the
/// server deleted it, or the edit deletes it).
public struct Conflict: Sendable, Hashable {
    public var type: String
    public var key: JSONValue
    /// The row as the pending local edit writes it.
    public var local: [String: JSONValue]?
    /// The server's row the edit was based on.
    public var base: [String: JSONValue]?
    /// The server's row now.
    public var server: [String: JSONValue]?

    public init(
        type: String, key: JSONValue, local: [String: JSONValue]?, base: [String: JSONValue]?,
        server: [String: JSONValue]?
    ) {
        self.type = type
        self.key = key
        self.local = local
        self.base = base
        self.server = server
    }

    /// The local edit rebased on the server's row: the server's row with the fields the edit
    /// changed, when the two changed different fields (or the same ones to the same values);
    /// `nil` when they overlap, or when either side deleted the row.
    ///
    /// ```swift
    /// // base: title "Talk", capacity 80; local: capacity 90; server: title "Keynote"
    /// conflict.mergedFields  // title "Keynote", capacity 90
    /// ```
    public var mergedFields: [String: JSONValue]? {
        guard let local, let base, let server else { return nil }
        var merged = server
        for (name, value) in local where value != base[name] {
            if let theirs = server[name], theirs != base[name], theirs != value { return nil }
            merged[name] = value
        }
        return merged
    }
}

/// What the sync does when a server change meets a pending local edit of the same row
/// (``SeedImporter/Configuration/conflicts``).
///
/// The sync sees such a conflict when it catches up (the server's change set writes a row a
/// pending local change set changes) or when a push is answered `conflict` (the server's change
/// came first); the push is then kept until the catch-up has brought the server's row, and
/// resolved there. A resolved edit is rebased: it pushes the resolved row on the server's
/// revision, and the app's row shows it at once (``ImportEvent/merged(_:pushing:)``). An edit
/// that is not resolved loses: the app's row is the server's, and the local change set conflicts
/// when it is pushed (``ImportEvent/overwritten(_:)``, then ``ImportEvent/conflict(id:changeSet:)``).
///
/// Only an update meeting an update is resolved: a local create of a key the server has, and a
/// delete on either side, always go to the server.
///
/// ```swift
/// // Keep the user's title, take everything else from the server.
/// let keepTitles = ConflictResolution.custom { conflict in
///     guard var row = conflict.server else { return nil }
///     row["title"] = conflict.local?["title"]
///     return row
/// }
/// ```
public struct ConflictResolution: Sendable {
    let resolve: (@Sendable (Conflict) -> [String: JSONValue]?)?

    /// The server's row wins; the local edit is dropped (the default).
    public static let serverWins = ConflictResolution(resolve: nil)

    /// The edit is rebased on the server's row when they changed different fields
    /// (``Conflict/mergedFields``); only a real overlap loses to the server.
    public static let mergeFields = ConflictResolution { $0.mergedFields }

    /// `resolve` gets the three versions and returns the row to push (fields it leaves out
    /// keep the server's values), or `nil` to let the server's row win.
    public static func custom(_ resolve: @escaping @Sendable (Conflict) -> [String: JSONValue]?) -> ConflictResolution {
        ConflictResolution(resolve: resolve)
    }

    /// The row to push for `conflict`, or `nil` when the server's wins.
    func resolution(of conflict: Conflict) -> [String: JSONValue]? {
        guard let resolve, conflict.local != nil, conflict.base != nil, let server = conflict.server else { return nil }
        return resolve(conflict).map { server.merging($0) { _, chosen in chosen } }
    }

    /// Whether conflicts may be resolved at all (anything but ``serverWins``).
    var resolves: Bool { resolve != nil }
}
