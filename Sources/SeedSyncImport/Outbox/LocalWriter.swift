import Foundation
public import GRDB
public import SeedSyncModel
import SeedSyncSeed

/// An app's database as local edits see it: a path, the app's own connection when it handed one
/// over, and how long to wait while an importer replaces the file. It needs no server: edits are
/// written at once and queued, and the next ``SeedImporter/run()`` (or ``SyncEngine``) pushes them.
///
/// ```swift
/// let writer = LocalWriter(database: appSupport.appendingPathComponent("events.sqlite").path)
/// let hall = try await writer.write { changes in
///     try changes.create("locations", ["name": "Hall", "city": "Lyon", "latitude": 45.7, "longitude": 4.8])
/// }
/// print(try await writer.pendingChangeSets())  // 1
/// ```
public struct LocalWriter: Sendable {
    /// The app's database file.
    public let path: String
    /// The app's own connection to it, when it handed one over.
    public let database: (any DatabaseWriter)?
    /// Seconds to wait while an importer replaces the database with a newer seed or snapshot.
    public let lockTimeout: Double

    /// A writer that opens the database at `path` for each write and closes it after.
    public init(database path: String, lockTimeout: Double = 30) {
        self.path = path
        database = nil
        self.lockTimeout = lockTimeout
    }

    /// A writer through the app's own GRDB connection, so that its observations see every edit.
    public init(database: any DatabaseWriter, lockTimeout: Double = 30) {
        path = database.path
        self.database = database
        self.lockTimeout = lockTimeout
    }

    /// Applies local edits to the database at once and queues them as one change set (see
    /// ``SeedImporter/write(_:)``, which this is).
    ///
    /// - Throws: ``ImportError``: ``ImportError/Code/invalidDatabase`` when there is no database
    ///   yet; ``ImportError/Code/invalidChangeSet`` when an edit does not fit the schema or leaves a
    ///   reference to a missing row; ``ImportError/Code/rowNotFound`` when it names a row that does
    ///   not exist; ``ImportError/Code/locked`` when an importer replaced the database for longer
    ///   than ``lockTimeout``.
    @discardableResult
    public func write<T: Sendable>(_ body: @escaping @Sendable (LocalChanges) throws -> T) async throws -> T {
        try await writeRecording(body).result
    }

    /// ``write(_:)``, with the rows it changed (for a ``SyncEngine``'s observers).
    func writeRecording<T: Sendable>(_ body: @escaping @Sendable (LocalChanges) throws -> T) async throws -> (
        result: T, changes: [RowChange]
    ) {
        let deadline = ContinuousClock.now + .milliseconds(Int(lockTimeout * 1000))
        while true {
            if let result = try await attempt(body) { return result }
            guard ContinuousClock.now < deadline else {
                throw ImportError(
                    .locked,
                    "the importer is replacing \(path) with a newer seed or snapshot; gave up waiting after \(lockTimeout) s"
                )
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// One try at a write: `nil` while an importer replaces the database.
    private func attempt<T: Sendable>(_ body: @escaping @Sendable (LocalChanges) throws -> T) async throws -> (
        result: T, changes: [RowChange]
    )? {
        guard let local = try await LocalDatabase.open(at: path, app: database) else {
            throw ImportError(
                .invalidDatabase,
                "there is no database at \(path) to write to: run the importer once to install the seed")
        }
        let outbox = Outbox(schema: local.metadata.schema)
        let path = self.path
        let result: (T, [RowChange])?
        do {
            result = try await local.write("write local changes to \(path)") { db -> (T, [RowChange])? in
                // Wait while it is replaced; open it again when it was, possibly with another schema.
                guard try !Self.isBeingReplaced(path, db),
                    try SeedMetadata.storedSchemaHash(db) == local.metadata.schemaHash
                else { return nil }
                try Outbox.create(in: db)
                let changes = LocalChanges(db: db, outbox: outbox)
                let result = try body(changes)
                _ = try changes.finish()
                return (result, changes.changedRows)
            }
        } catch {
            try? await local.close()
            throw error
        }
        try await local.close()
        return result.map { (result: $0.0, changes: $0.1) }
    }

    /// Whether an importer is replacing the database: marked so, with its lock held. A mark left
    /// by an importer that was killed is removed.
    private static func isBeingReplaced(_ path: String, _ db: Database) throws -> Bool {
        guard try Outbox.isMarkedReplacing(in: db) else { return false }
        if ImportLock.isHeld(for: path) { return true }
        try Outbox.unmarkReplacing(in: db)
        return false
    }

    /// The local change sets waiting to be pushed; 0 when there is no database.
    public func pendingChangeSets() async throws -> Int {
        guard let local = try await LocalDatabase.open(at: path, app: database) else { return 0 }
        let count: Int
        do {
            count = try await local.read { db in try Outbox.count(in: db) }
        } catch {
            try? await local.close()
            throw error
        }
        try await local.close()
        return count
    }
}

extension LocalWriter {
    /// One change set ``write(changeSets:from:)`` queued: its id, and the key each temporary key
    /// of the list was given in the database, by type.
    public struct QueuedChangeSet: Sendable, Equatable {
        public var id: String
        public var keys: [String: [Int64: JSONValue]]
    }

    /// Writes change sets in the shape the server sends, without revisions, each as one
    /// ``write(_:)`` (what `seed-import write --file` does). New rows of integer-keyed types take
    /// negative temporary keys, which later fields and change sets of the list may reference (any
    /// other negative key names a row an earlier write created that the server has not answered
    /// yet); updates may give some fields only; deletes need no attributes.
    ///
    /// Every change set is checked to fit one push before anything is written; then they are
    /// written in order, and the first that fails stops the list, the ones before it staying queued.
    ///
    /// ```swift
    /// let queued = try await writer.write(changeSets: try changeSets(in: data), from: "edits.json")
    /// print(queued.map(\.id))
    /// ```
    ///
    /// - Parameters:
    ///   - changeSets: the change sets, in the order they are written.
    ///   - source: what holds the list, named in errors ("change set 2 of edits.json: …").
    /// - Throws: ``ImportError`` as ``write(_:)`` does, saying which change set failed and how many
    ///   of the list were queued.
    public func write(changeSets: [ChangeSet], from source: String) async throws -> [QueuedChangeSet] {
        for (index, changeSet) in changeSets.enumerated() {
            let size = changeSet.jsonBytes().count
            guard size <= LocalChanges.maxBytes else {
                throw ImportError(
                    .invalidChangeSet,
                    "change set \(index + 1) of \(source) is \(size) bytes of JSON, more than the \(LocalChanges.maxBytes) one change set may be (a push carries whole change sets): split it into several; nothing was written"
                )
            }
        }
        var queued: [QueuedChangeSet] = []
        var keys: [String: [Int64: JSONValue]] = [:]
        for (index, changeSet) in changeSets.enumerated() {
            let listKeys = keys
            do {
                let (id, created) = try await write { changes in
                    try LocalEdit(changeSet, fileKeys: listKeys).apply(to: changes)
                }
                queued.append(QueuedChangeSet(id: id, keys: created))
                keys.merge(created) { $0.merging($1) { $1 } }
            } catch let error as ImportError {
                let done = index == 0 ? "nothing was queued" : "the first \(index) were queued"
                throw ImportError(
                    error.code,
                    "change set \(index + 1) of \(source): \(error); it and the ones after it were not applied, \(done)"
                )
            }
        }
        return queued
    }
}
