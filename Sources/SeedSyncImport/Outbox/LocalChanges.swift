import Foundation
import GRDB
public import SeedSyncModel

/// The edits of one ``SeedImporter/write(_:)``: applied to the app's tables at once, and queued
/// together as one change set that the next sync pushes.
///
/// New rows of integer-keyed types get negative temporary keys, which later edits (in this write
/// or a later one) may use and reference; once the server has applied the change set, the sync
/// replaces them with the real keys everywhere and reports the map in ``ImportEvent/pushed(id:revision:keys:)``.
///
/// ```swift
/// let opening = try await importer.write { changes in
///     let hall = try changes.create("locations", ["name": "Hall", "city": "Lyon", "latitude": 45.7, "longitude": 4.8])
///     try changes.update("events", key: 5, ["title": "Moved to the hall", "location_id": hall])
///     try changes.delete("events", key: 9)
///     return try changes.create("events", ["title": "Opening", "starts_at": "2026-12-01T18:00:00Z",
///                                          "location_id": hall, "capacity": 80, "cancelled": false])
/// }
/// ```
public final class LocalChanges {
    /// The largest change set one write may queue, in bytes of its JSON: 4 MiB (a push carries
    /// whole change sets, and a server takes 8 MiB per request by default). A larger one is refused
    /// with ``ImportError/Code/invalidChangeSet`` and nothing of the write is kept.
    public static let maxBytes = PendingChanges.maxPushBytes

    /// The id the change set is pushed under (its idempotency key).
    public let id: String
    /// The schema of the app's database: the types and fields edits may name.
    public var schema: DatasetSchema { outbox.schema }

    private enum State {
        case created([String: JSONValue])
        case updated([String: JSONValue])
        case deleted(base: Int64)
    }

    private let db: Database
    private let outbox: Outbox
    /// The rows in the order the write first touched them, and the same rows as a set.
    private var order: [RowID] = []
    private var touched: Set<RowID> = []
    private var states: [RowID: State] = [:]
    /// The temporary key this write last gave a new row, by type.
    private var lastKeys: [String: Int64] = [:]

    init(db: Database, outbox: Outbox) {
        self.db = db
        self.outbox = outbox
        id = Self.newID()
    }

    /// Creates a row of `type` with `fields` (every field that is not nullable; the key too when
    /// the type's key is text) and returns its key: a temporary negative one for an integer key.
    ///
    /// - Throws: ``ImportError/Code/invalidChangeSet`` when the fields do not fit the type, or a
    ///   row with the given text key exists.
    @discardableResult
    public func create(_ type: String, _ fields: [String: JSONValue]) throws -> JSONValue {
        let entity = try outbox.type(type)
        var attributes = fields
        let key: JSONValue
        if entity.primaryKey.type == .integer {
            guard fields[entity.primaryKey.name] == nil else {
                throw ImportError(
                    .invalidChangeSet,
                    "a new row of \(type) takes a temporary key: leave '\(entity.primaryKey.name)' out")
            }
            key = .int(try temporaryKey(of: entity))
        } else {
            guard case .string(let text)? = fields[entity.primaryKey.name] else {
                throw ImportError(
                    .invalidChangeSet, "a new row of \(type) needs its key '\(entity.primaryKey.name)', a string")
            }
            key = .string(text)
        }
        attributes[entity.primaryKey.name] = nil
        guard attributes[SchemaNames.revisionColumn] == nil else {
            throw ImportError(
                .invalidChangeSet, "a new row of \(type): 'revision' is kept by SeedSync and cannot be written")
        }
        let row = RowID(type: type, key: key.keyString!)
        guard try outbox.localRow(row, in: db) == nil else {
            throw ImportError(.invalidChangeSet, "\(type)[\(row.key)] exists already: update it instead")
        }
        if try outbox.shadow(of: row, in: db) == nil { try outbox.setShadow(of: row, to: nil, in: db) }
        if case .deleted(let base)? = states[row] {
            // Deleted and made again in one write: on the server, the row is updated.
            let updated = attributes.merging([SchemaNames.revisionColumn: .int(base)]) { $1 }
            try outbox.put(row, updated, in: db)
            record(row, .updated(updated))
        } else {
            try outbox.put(row, attributes.merging([SchemaNames.revisionColumn: 0]) { $1 }, in: db)
            record(row, .created(attributes))
        }
        return key
    }

    /// Changes `fields` of the row `type[key]`; the fields not given keep their values.
    ///
    /// - Throws: ``ImportError/Code/rowNotFound`` when there is no such row,
    ///   ``ImportError/Code/invalidChangeSet`` when a field does not fit.
    public func update(_ type: String, key: JSONValue, _ fields: [String: JSONValue]) throws {
        let entity = try outbox.type(type)
        let (row, current) = try existing(type, key)
        if let given = fields[entity.primaryKey.name], given != key {
            throw ImportError(.invalidChangeSet, "\(type)[\(row.key)]: a key cannot be changed")
        }
        guard fields[SchemaNames.revisionColumn] == nil else {
            throw ImportError(
                .invalidChangeSet, "\(type)[\(row.key)]: 'revision' is kept by SeedSync and cannot be written")
        }
        var merged = current
        for (name, value) in fields where name != entity.primaryKey.name { merged[name] = value }
        try outbox.put(row, merged, in: db)
        try keepShadow(of: row, current)
        switch states[row] {
        case .created?:
            merged[SchemaNames.revisionColumn] = nil
            states[row] = .created(merged)
        default:
            record(row, .updated(merged))
        }
    }

    /// Deletes the row `type[key]`.
    ///
    /// - Throws: ``ImportError/Code/rowNotFound`` when there is no such row.
    public func delete(_ type: String, key: JSONValue) throws {
        let (row, current) = try existing(type, key)
        try outbox.put(row, nil, in: db)
        try keepShadow(of: row, current)
        switch states[row] {
        case .created?: states[row] = nil
        default: record(row, .deleted(base: current[SchemaNames.revisionColumn]?.intValue ?? 0))
        }
    }

    /// The row `type[key]` as the app sees it now: its fields and `revision`.
    public func row(_ type: String, key: JSONValue) throws -> [String: JSONValue]? {
        _ = try outbox.type(type)
        return try outbox.localRow(RowID(type: type, key: key.keyString ?? ""), in: db)
    }

    /// The next temporary key of `type`: the one below the last this write gave while it is free
    /// (it always is, unless the keys were found in a gap, see ``Outbox/nextTemporaryKey(of:in:)``),
    /// so the table and the shadows are searched once per write, not once per new row.
    private func temporaryKey(of type: EntityType) throws -> Int64 {
        var key: Int64?
        if let last = lastKeys[type.name], last > .min {
            let row = RowID(type: type.name, key: String(last - 1))
            if try outbox.localRow(row, in: db) == nil, try outbox.shadow(of: row, in: db) == nil { key = last - 1 }
        }
        let next = try key ?? outbox.nextTemporaryKey(of: type, in: db)
        lastKeys[type.name] = next
        return next
    }

    private func existing(_ type: String, _ key: JSONValue) throws -> (RowID, [String: JSONValue]) {
        let entity = try outbox.type(type)
        guard entity.primaryKey.type.accepts(key), let string = key.keyString else {
            throw ImportError(
                .invalidChangeSet, "\(type): \(key) is not a valid \(entity.primaryKey.type.rawValue) key")
        }
        let row = RowID(type: type, key: string)
        guard let current = try outbox.localRow(row, in: db) else {
            throw ImportError(.rowNotFound, "\(type)[\(string)] does not exist in the app's database")
        }
        return (row, current)
    }

    /// The server's state of a row is what the table holds until a pending change set touches it.
    private func keepShadow(of row: RowID, _ current: [String: JSONValue]) throws {
        if try outbox.shadow(of: row, in: db) == nil { try outbox.setShadow(of: row, to: current, in: db) }
    }

    /// The rows this write changed for an observer: created, updated or deleted (a row created
    /// and deleted again in it is not there).
    var changedRows: [RowChange] {
        order.compactMap { row in
            switch states[row] {
            case .created?: RowChange(row: row, kind: .inserted)
            case .updated?: RowChange(row: row, kind: .updated)
            case .deleted?: RowChange(row: row, kind: .deleted)
            case nil: nil
            }
        }
    }

    private func record(_ row: RowID, _ state: State) {
        states[row] = state
        if touched.insert(row).inserted { order.append(row) }
    }

    /// Queues the change set, checks every reference it touches, and forgets the shadows of rows
    /// created and deleted again within it. Returns `false` when there was nothing to queue.
    func finish() throws -> Bool {
        let vanished = order.filter { states[$0] == nil }
        if !vanished.isEmpty {
            let pending = try outbox.entries(in: db)
            for row in vanished where !pending.contains(where: { $0.version(of: row) != nil }) {
                try outbox.removeShadow(of: row, in: db)
            }
        }
        for row in order {
            if let problem = try outbox.brokenReference(of: row, in: db) {
                throw ImportError(.invalidChangeSet, "\(problem); nothing was written")
            }
        }
        let changeSet = changeSet()
        guard !changeSet.changes.isEmpty else { return false }
        let size = changeSet.jsonBytes().count
        guard size <= Self.maxBytes else {
            throw ImportError(
                .invalidChangeSet,
                "the change set is \(size) bytes, more than the \(Self.maxBytes) a push may carry: split the edits into several writes; nothing was written"
            )
        }
        try outbox.append(id: id, changeSet, in: db)
        return true
    }

    private func changeSet() -> ChangeSet {
        let changes = outbox.schema.types.compactMap { type -> TypeChanges? in
            var changes = TypeChanges(type: type.name)
            for row in order where row.type == type.name {
                guard let state = states[row], let key = try? outbox.key(of: row) else { continue }
                switch state {
                case .created(let attributes):
                    changes.create.append(key)
                    changes.attributes[row.key] = attributes
                case .updated(let attributes):
                    changes.update.append(key)
                    changes.attributes[row.key] = attributes
                case .deleted(let base):
                    changes.delete.append(key)
                    changes.attributes[row.key] = [SchemaNames.revisionColumn: .int(base)]
                }
            }
            return changes.create.isEmpty && changes.update.isEmpty && changes.delete.isEmpty ? nil : changes
        }
        return ChangeSet(changes: changes)
    }

    /// 32 random lowercase hex digits.
    static func newID() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<2).map { _ in String(generator.next() as UInt64, radix: 16).leftPadded(to: 16) }.joined()
    }
}

extension String {
    fileprivate func leftPadded(to length: Int) -> String {
        String(repeating: "0", count: max(0, length - count)) + self
    }
}
