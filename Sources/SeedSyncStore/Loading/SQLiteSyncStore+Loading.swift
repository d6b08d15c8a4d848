import SeedSyncModel

extension SQLiteSyncStore {
    /// Loads an NDJSON file into `type` as one bulk revision (see ``bulkWrite(_:)``).
    ///
    /// - Returns: the revision and the number of rows loaded.
    public func load(ndjsonFile path: String, into type: String) async throws -> (revision: Int64, rows: Int) {
        let entity = try table(type).type
        let counter = RowCounter()
        let revision = try await bulkWrite { writer in
            var rows = try NDJSONRowReader(path: path, type: entity)
            counter.count = try writer.upsert(&rows, into: type)
        }
        return (revision, counter.count)
    }
}

/// Carries a count out of a `@Sendable` write closure, which runs once on the writer's queue.
private final class RowCounter: @unchecked Sendable {
    var count = 0
}
