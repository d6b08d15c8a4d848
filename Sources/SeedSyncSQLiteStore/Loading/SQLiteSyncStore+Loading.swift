import SeedSyncModel
public import SeedSyncStore

extension SQLiteSyncStore: MaintainedSyncStore {
    public func bulkLoad(_ loads: [BulkLoad]) async throws -> (revision: Int64, rows: [String: Int]) {
        let schema = try await schemaHistory().newest.schema
        for load in loads where schema.type(named: load.type) == nil { throw SyncStoreError.unknownType(load.type) }
        let (revision, counts) = try await bulkWrite { writer in
            var counts: [String: Int] = [:]
            for load in loads {
                var rows = try load.makeRows()
                counts[load.type, default: 0] += try writer.upsert(&rows, into: load.type)
            }
            return counts
        }
        return (revision, counts)
    }
}
