import Foundation
import SeedSyncModel

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
        guard let database = try LocalDatabase.open(at: configuration.database) else {
            throw ImportError(.invalidDatabase, "there is no database at \(configuration.database) to write to: run the importer once to install the seed")
        }
        let outbox = Outbox(schema: database.metadata.schema)
        do {
            let result = try await database.write("write local changes to \(configuration.database)") { db in
                let pending = try outbox.entries(in: db)
                try Outbox.create(in: db)
                let changes = LocalChanges(db: db, outbox: outbox)
                let result = try body(changes)
                _ = try changes.finish(pending: pending)
                return result
            }
            try await database.close()
            return result
        } catch {
            try? await database.close()
            throw error
        }
    }

    /// The local change sets waiting to be pushed; 0 when there is no database.
    public func pendingChangeSets() async throws -> Int {
        guard let database = try LocalDatabase.open(at: configuration.database) else { return 0 }
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
