public import SeedSyncModel

/// A stream of whole rows for a bulk load: generated demo rows, lines of an NDJSON file.
///
/// Pulling one row at a time keeps a load's memory flat however large the input is.
public protocol RowSource {
    /// The next row, or `nil` at the end.
    ///
    /// - Throws: when the input is malformed; the load then writes nothing.
    mutating func nextRow() throws -> RowValues?
}

/// The rows of one type for a bulk load (`load`, `init --demo`): made inside the load's
/// transaction, so a store can pull them as it writes.
///
/// ```swift
/// let load = BulkLoad(type: "events") { try NDJSONRowReader(path: "events.ndjson", type: events) }
/// ```
public struct BulkLoad: Sendable {
    public var type: String
    public var makeRows: @Sendable () throws -> any RowSource

    public init(type: String, makeRows: @escaping @Sendable () throws -> any RowSource) {
        self.type = type
        self.makeRows = makeRows
    }
}
