import GRDB
import SeedSyncModel

extension SeedImporter {
    /// The importer's database as local edits see it: its path, the app's connection and the lock timeout.
    public var writer: LocalWriter {
        database.map { LocalWriter(database: $0, lockTimeout: configuration.lockTimeout) }
            ?? LocalWriter(database: configuration.database, lockTimeout: configuration.lockTimeout)
    }

    /// Applies local edits to the app's database at once and queues them as one change set,
    /// which the next ``run()`` pushes to the server (write-back).
    ///
    /// `body` makes the edits through ``LocalChanges``; they are written in one transaction with
    /// the outbox entry, so the app's readers see them when `write` returns, and a killed app
    /// loses all of them or none. When `body` throws, nothing is written. It may run while a
    /// ``run()`` is syncing: the two take turns at the database. No server is asked: ``LocalWriter``
    /// does the same for a tool that has no server configuration.
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
        try await writer.write(body)
    }

    /// The local change sets waiting to be pushed; 0 when there is no database.
    public func pendingChangeSets() async throws -> Int {
        try await writer.pendingChangeSets()
    }
}
