/// The answer of `GET /v1/snapshot/{type}/uniform`: which of the fields asked for hold one value in
/// every row of the type (of the scope values read), and that value, at ``revision``.
///
/// A client that migrates in place asks it for the fields its new version adds (PROTOCOL.md §9.4):
/// it fills a field listed here with its value locally, in every row it has, instead of downloading
/// it row by row, then catches up from its own revision as always. That is sound when the answer was
/// read at the client's revision or later: a row the catch-up does not write is the same at
/// ``revision`` as at the client's, so it held the value then. Fields the answer leaves out vary
/// from row to row (or the server could not tell): they are downloaded as columns.
///
/// ```json
/// {"type": "events", "revision": 5031, "uniform": {"notes": "no notes yet", "rating": null}}
/// ```
public struct UniformFields: JSONReadable, Sendable, Hashable {
    public var type: String
    /// The server's revision the answer was read at.
    public var revision: Int64
    /// The fields that hold one value in every row, by name, with that value. A type with no rows
    /// lists each field asked for, with its absent value (its default, or `null`).
    public var values: [String: JSONValue]

    public init(type: String, revision: Int64, values: [String: JSONValue]) {
        self.type = type
        self.revision = revision
        self.values = values
    }

    /// The answer a store reads for `fields` of `type`: each field's `sources` in the newest
    /// version (``VersionProjection/newestSources(of:fields:)``), with `columns`, the newest columns
    /// that hold one value in every row read, by name (`nil` when no row was read: every field
    /// then holds its absent value). A field the newest version dropped holds its absent value.
    package init(
        type: String, revision: Int64, sources: [(field: Field, source: VersionProjection.NewestSource)],
        columns: [String: JSONValue]?
    ) {
        var values: [String: JSONValue] = [:]
        for (field, source) in sources {
            switch source {
            case .absent(let value): values[field.name] = value
            case .column(let name):
                guard let columns else {
                    values[field.name] = field.absentValue
                    continue
                }
                if let value = columns[name] { values[field.name] = value }
            }
        }
        self.init(type: type, revision: revision, values: values)
    }

    /// Reads an answer from parsed JSON (see ``JSONParser``).
    ///
    /// - Throws: ``JSONShapeError`` when a member is missing or of the wrong kind.
    public init(json: JSONValue) throws(JSONShapeError) {
        let members = try JSONMembers(json, at: "")
        type = try members.string("type")
        revision = try members.int64("revision")
        guard case .object(let values) = try members.value("uniform") else {
            throw JSONShapeError(.wrongType, "uniform", "expected an object")
        }
        self.values = values
    }

    /// The answer as compact JSON: `type` and `revision` first (a server that keeps answers reads
    /// the revision from their first bytes, as it does a page's), the fields in name order, so
    /// equal answers are equal bytes.
    public func jsonBytes() -> [UInt8] {
        var writer = JSONWriter(capacity: 64 + values.count * 32)
        writer.beginObject()
        writer.key("type")
        writer.value(.string(type))
        writer.key("revision")
        writer.value(.int(revision))
        writer.key("uniform")
        writer.beginObject()
        for name in values.keys.sorted() {
            writer.key(name)
            writer.value(values[name]!)
        }
        writer.endObject()
        writer.endObject()
        return writer.bytes
    }
}
