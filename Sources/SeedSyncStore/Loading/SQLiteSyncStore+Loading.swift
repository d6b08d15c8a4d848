import SeedSyncModel

extension SQLiteSyncStore {
    /// Loads an NDJSON file into `type` as one bulk revision (see ``bulkWrite(_:)``).
    ///
    /// - Returns: the revision and the number of rows loaded.
    public func load(ndjsonFile path: String, into type: String) async throws -> (revision: Int64, rows: Int) {
        let entity = try table(type).type
        let (revision, rows) = try await bulkWrite { writer in
            var rows = try NDJSONRowReader(path: path, type: entity)
            return try writer.upsert(&rows, into: type)
        }
        return (revision, rows)
    }
}
