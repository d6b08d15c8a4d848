import SeedSyncModel
public import SeedSyncStore

extension ChangeGenerator {
    /// Commits `count` generated change sets to `store`, one revision each.
    ///
    /// ```swift
    /// let revisions = try await ChangeGenerator.mutate(store, changes: 5_000, seed: 7)
    /// ```
    ///
    /// - Returns: the first and last revision written, or `nil` when `count` is 0.
    @discardableResult
    public static func mutate(_ store: any MaintainedSyncStore, changes count: Int, seed: UInt64) async throws
        -> ClosedRange<
            Int64
        >?
    {
        let schema = try await store.schemaInfo().schema
        var keys: [String: [JSONValue]] = [:]
        for type in schema.types {
            keys[type.name] = try await store.keys(of: type.name)
        }
        var generator = ChangeGenerator(schema: schema, existingKeys: keys, seed: seed)
        var first: Int64?
        var last: Int64 = 0
        for _ in 0..<count {
            last = try await store.commit(generator.next())
            first = first ?? last
        }
        return first.map { $0...last }
    }
}
