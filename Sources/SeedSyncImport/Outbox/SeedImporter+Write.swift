import Foundation
import GRDB
import SeedSyncModel
import SeedSyncSeed

extension SeedImporter {
    /// Applies local edits to the app's database at once and queues them as one change set,
    /// which the next ``run()`` pushes to the server (write-back).
    ///
    /// `body` makes the edits through ``LocalChanges``; they are written in one transaction with
    /// the outbox entry, so the app's readers see them when `write` returns, and a killed app
    /// loses all of them or none. When `body` throws, nothing is written. It may run while a
    /// ``run()`` is syncing: the two take turns at the database.
    ///
    /// ```swift
    /// let keys = try await importer.write { changes in
    ///     let hall = try changes.create("locations", ["name": "Hall", "city": "Lyon", "latitude": 45.7, "longitude": 4.8])
    ///     try changes.update("events", key: 5, ["location_id": hall])
    ///     return hall
    /// }
    /// try await importer.run()  // pushes, then catches up; .pushed(…) gives hall's real key
    /// ```
    ///
    /// - Throws: ``ImportError``: ``ImportError/Code/invalidDatabase`` when there is no database
    ///   yet (``run()`` installs it); ``ImportError/Code/invalidChangeSet`` when an edit does not
    ///   fit the schema or leaves a reference to a missing row; ``ImportError/Code/rowNotFound``
    ///   when it names a row that does not exist.
    @discardableResult
    public func write<T: Sendable>(_ body: @escaping @Sendable (LocalChanges) throws -> T) async throws -> T {
        try await writeRecording(body).result
    }

    /// ``write(_:)``, with the rows it changed (for a ``SyncEngine``'s observers).
    func writeRecording<T: Sendable>(_ body: @escaping @Sendable (LocalChanges) throws -> T) async throws -> (
        result: T, changes: [RowChange]
    ) {
        let path = configuration.database
        let deadline = ContinuousClock.now + .milliseconds(Int(configuration.lockTimeout * 1000))
        while true {
            guard let database = try await LocalDatabase.open(at: path, app: self.database) else {
                throw ImportError(
                    .invalidDatabase,
                    "there is no database at \(path) to write to: run the importer once to install the seed")
            }
            let outbox = Outbox(schema: database.metadata.schema)
            let result: (T, [RowChange])?
            do {
                result = try await database.write("write local changes to \(path)") { db -> (T, [RowChange])? in
                    // Wait while it is replaced; open it again when it was, possibly with another schema.
                    guard try !Self.isBeingReplaced(path, db),
                        try SeedMetadata.storedSchemaHash(db) == database.metadata.schemaHash
                    else { return nil }
                    try Outbox.create(in: db)
                    let changes = LocalChanges(db: db, outbox: outbox)
                    let result = try body(changes)
                    _ = try changes.finish()
                    return (result, changes.changedRows)
                }
            } catch {
                try? await database.close()
                throw error
            }
            try await database.close()
            if let result { return (result.0, result.1) }
            guard ContinuousClock.now < deadline else {
                throw ImportError(
                    .locked,
                    "the importer is replacing \(path) with a newer seed or snapshot; gave up waiting after \(configuration.lockTimeout) s"
                )
            }
            try await Task.sleep(for: .milliseconds(50))
        }
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
        guard let database = try await LocalDatabase.open(at: configuration.database, app: database) else { return 0 }
        let count: Int
        do {
            count = try await database.read { db in try Outbox.count(in: db) }
        } catch {
            try? await database.close()
            throw error
        }
        try await database.close()
        return count
    }
}
