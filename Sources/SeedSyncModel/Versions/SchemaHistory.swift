import Foundation

/// Every schema version a store has served, oldest first: what lets clients of every version keep
/// syncing after the schema changed.
///
/// A new version is made by an upgrade (``upgrading(to:renaming:at:)``) and only by changes that
/// clients of older versions can be served through: a new type, a new nullable field or one with a
/// default, a field dropped, a field renamed (stated, never guessed), a default set or changed.
/// Each version records the store's revision when it was made: change sets after it are written
/// in its shape, change sets before it in an older one. ``VersionProjection`` serves any stored row
/// or change set in any kept version.
///
/// ```swift
/// var history = SchemaHistory(DemoDataset.schema)
/// let upgrade = try history.upgrading(to: newSchema, renaming: [FieldRename("events.title=name")!], at: 120)
/// history = upgrade.history
/// print(upgrade.changes)  // [events.title renamed to name, events.notes added]
/// ```
///
/// ## Rules a history keeps
/// 1. Version numbers increase; revisions never decrease.
/// 2. Types are never dropped, and a type's key never changes.
/// 3. A field keeps its type, nullability and reference for life; only its name and default change.
/// 4. A name a type's field once had is never given to another field of that type: a stored row's
///    member names its field in every version.
public struct SchemaHistory: Sendable, Hashable {
    /// The versions, oldest first; never empty.
    public internal(set) var versions: [SchemaVersion]

    /// A history of one version, `schema`, made at `revision` (0 for a new store).
    public init(_ schema: DatasetSchema, revision: Int64 = 0) {
        versions = [SchemaVersion(schema: schema, revision: revision, renames: [])]
    }

    /// A history as a store kept it, oldest first.
    ///
    /// - Throws: ``SchemaUpgradeError`` when the versions break the rules of a history (numbers
    ///   out of order, a type dropped): storage that was changed by hand.
    public init(versions: [SchemaVersion]) throws(SchemaUpgradeError) {
        guard let first = versions.first else {
            throw SchemaUpgradeError(.invalidHistory, "a schema history needs at least one version")
        }
        var history = SchemaHistory(first.schema, revision: first.revision)
        for version in versions.dropFirst() {
            history = try history.upgrading(
                to: version.schema, renaming: version.renames, at: version.revision, asStored: true
            ).history
        }
        self = history
    }

    /// The newest version: the shape of the stored rows.
    public var newest: SchemaVersion { versions[versions.count - 1] }

    /// The oldest version kept: what a client that names no version is served in.
    public var oldest: SchemaVersion { versions[0] }

    /// The version numbered `number`, if the history has it.
    public func version(_ number: Int) -> SchemaVersion? {
        versions.first { $0.number == number }
    }

    /// The index in ``versions`` of the version change sets of `revision` were written in: the
    /// newest made before that revision.
    package func index(writing revision: Int64) -> Int {
        versions.lastIndex { $0.revision < revision } ?? 0
    }

    /// The version change sets of `revision` were written in.
    public func version(writing revision: Int64) -> SchemaVersion {
        versions[index(writing: revision)]
    }
}

extension SchemaHistory {
    /// The versions a store keeps, read row by row (`rows` oldest first): the longest run from the
    /// first that reads back as a history, and each version after it, unreadable, with the
    /// reason. A version that cannot be read (a row changed by hand, or written by a server with a
    /// since-fixed defect) makes that version and the ones after it unavailable, never the
    /// versions before it: a server keeps serving those.
    ///
    /// - Returns: the history, `nil` when not even the first version reads.
    package static func read(_ rows: [StoredVersion]) -> (history: SchemaHistory?, unreadable: [UnreadableVersion]) {
        var history: SchemaHistory?
        for (index, row) in rows.enumerated() {
            do {
                history = try reading(row, after: history)
            } catch {
                let unreadable = rows[index...].enumerated().map { offset, later in
                    UnreadableVersion(
                        number: later.number,
                        reason: offset == 0 ? error.detail : "it follows version \(row.number), which cannot be read")
                }
                return (history, unreadable)
            }
        }
        return (history, [])
    }

    /// `history` with the stored version `row` after it (or `row` alone, the first version), as
    /// a server reads it; also how an upgrade reads back the version it wrote before it commits.
    ///
    /// - Throws: ``SchemaUpgradeError`` saying why the row cannot be read.
    package static func reading(_ row: StoredVersion, after history: SchemaHistory?) throws(SchemaUpgradeError)
        -> SchemaHistory
    {
        let version: SchemaVersion
        do {
            let decoder = JSONDecoder()
            version = SchemaVersion(
                schema: try decoder.decode(DatasetSchema.self, from: Data(row.schema.utf8)), revision: row.revision,
                renames: try decoder.decode([FieldRename].self, from: Data(row.renames.utf8)))
        } catch {
            throw SchemaUpgradeError(.invalidHistory, "its JSON does not read as a schema (\(error))")
        }
        guard version.number == row.number else {
            throw SchemaUpgradeError(.invalidHistory, "its schema says schemaVersion \(version.number)")
        }
        if let history {
            return try history.upgrading(
                to: version.schema, renaming: version.renames, at: version.revision, asStored: true
            ).history
        }
        do {
            try version.schema.validate(allowingReservedTypeNames: true)
        } catch {
            throw SchemaUpgradeError(.invalidSchema, "\(error)")
        }
        return SchemaHistory(version.schema, revision: version.revision)
    }
}

extension SchemaHistory {
    /// Checks that `row`, the version `upgrade` wrote, reads back after `history` (the versions
    /// before it) as the history the upgrade made: what an upgrade checks before it commits, so
    /// a version no server could read is never stored.
    ///
    /// - Throws: ``SchemaUpgradeError`` `invalidSchema` saying why.
    package static func readBack(_ row: StoredVersion?, of upgrade: SchemaUpgrade, after history: SchemaHistory)
        throws(SchemaUpgradeError)
    {
        let number = upgrade.version.number
        guard let row else {
            throw SchemaUpgradeError(.invalidSchema, "version \(number) was not stored; nothing was changed")
        }
        let read: SchemaHistory
        do {
            read = try reading(row, after: history)
        } catch {
            throw SchemaUpgradeError(
                .invalidSchema,
                "version \(number) does not read back as it was written (\(error.detail)); nothing was changed")
        }
        guard read == upgrade.history else {
            throw SchemaUpgradeError(
                .invalidSchema, "version \(number) reads back other than it was written; nothing was changed")
        }
    }
}

/// One row of a store's schema versions, as stored: the schema and the renames as JSON text.
package struct StoredVersion: Sendable {
    package var number: Int
    package var revision: Int64
    package var schema: String
    package var renames: String

    package init(number: Int, revision: Int64, schema: String, renames: String) {
        self.number = number
        self.revision = revision
        self.schema = schema
        self.renames = renames
    }
}

extension StoredVersion {
    /// `version` as a store keeps it.
    package init(_ version: SchemaVersion) throws {
        let encoder = JSONEncoder.stable()
        self.init(
            number: version.number, revision: version.revision,
            schema: String(decoding: try encoder.encode(version.schema), as: UTF8.self),
            renames: String(decoding: try encoder.encode(version.renames), as: UTF8.self))
    }
}

/// A stored schema version no server can serve, and why (see ``SchemaHistory/read(_:)``).
package struct UnreadableVersion: Error, Sendable, Hashable {
    package var number: Int
    package var reason: String

    package init(number: Int, reason: String) {
        self.number = number
        self.reason = reason
    }
}

/// One schema version: the schema, when it was made, and what was renamed on the way to it.
public struct SchemaVersion: Codable, Sendable, Hashable {
    /// The schema; its `schemaVersion` is this version's number.
    public var schema: DatasetSchema
    /// The store's revision when this version was made: change sets after it are written in it.
    public var revision: Int64
    /// The fields renamed from the previous version.
    public var renames: [FieldRename]

    public init(schema: DatasetSchema, revision: Int64, renames: [FieldRename]) {
        self.schema = schema
        self.revision = revision
        self.renames = renames
    }

    /// The version number (the schema's `schemaVersion`).
    public var number: Int { schema.schemaVersion }
}

/// A field renamed by an upgrade: `type.from` is called `to` from the new version on.
///
/// ```swift
/// let rename = FieldRename("events.title=name")  // FieldRename(type: "events", from: "title", to: "name")
/// ```
public struct FieldRename: Codable, Sendable, Hashable, CustomStringConvertible {
    public var type: String
    public var from: String
    public var to: String

    public init(type: String, from: String, to: String) {
        self.type = type
        self.from = from
        self.to = to
    }

    /// Parses `type.from=to`, as `seed-server schema upgrade --rename` takes it; `nil` when the
    /// text has another shape.
    public init?(_ text: String) {
        let sides = text.split(separator: "=", omittingEmptySubsequences: false)
        guard sides.count == 2 else { return nil }
        let path = sides[0].split(separator: ".", omittingEmptySubsequences: false)
        guard path.count == 2, !path[0].isEmpty, !path[1].isEmpty, !sides[1].isEmpty else { return nil }
        self.init(type: String(path[0]), from: String(path[1]), to: String(sides[1]))
    }

    public var description: String { "\(type).\(from)=\(to)" }
}
