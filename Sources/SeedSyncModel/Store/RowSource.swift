/// A stream of whole rows for a bulk load: generated demo rows, lines of an NDJSON file.
///
/// Pulling one row at a time keeps a load's memory flat however large the input is.
public protocol RowSource {
    /// The next row, or `nil` at the end.
    ///
    /// - Throws: when the input is malformed; the load then writes nothing.
    mutating func nextRow() throws -> RowValues?
}
