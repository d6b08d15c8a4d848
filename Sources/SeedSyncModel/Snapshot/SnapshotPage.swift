/// One page of `GET /v1/snapshot/{type}`: current rows in primary-key order, as columns and rows.
///
/// ```json
/// {"type": "events", "revision": 42, "columns": ["id", "title", "revision"],
///  "rows": [[1, "Gig", 17], [2, "Talk", 40]], "next": 2}
/// ```
public struct SnapshotPage: Codable, Sendable, Hashable {
    public var type: String
    /// The server's revision when the page was read.
    public var revision: Int64
    /// The primary key, the fields in schema order, then `revision`.
    public var columns: [String]
    public var rows: [[JSONValue]]
    /// The key to pass as `after` for the next page, or `.null` when this page is the last.
    public var next: JSONValue

    public init(type: String, revision: Int64, columns: [String], rows: [[JSONValue]], next: JSONValue) {
        self.type = type
        self.revision = revision
        self.columns = columns
        self.rows = rows
        self.next = next
    }

    /// The page as compact JSON, members in the documented order.
    public func jsonBytes() -> [UInt8] {
        var writer = JSONWriter(capacity: 64 + rows.count * columns.count * 12)
        writer.beginObject()
        writer.key("type"); writer.value(.string(type))
        writer.key("revision"); writer.value(.int(revision))
        writer.key("columns"); writer.value(.array(columns.map(JSONValue.string)))
        writer.key("rows")
        writer.beginArray()
        for row in rows { writer.value(.array(row)) }
        writer.endArray()
        writer.key("next"); writer.value(next)
        writer.endObject()
        return writer.bytes
    }
}
