package import Foundation

/// One page of `GET /v1/snapshot/{type}`: current rows in primary-key order, as columns and rows.
///
/// ```json
/// {"type": "events", "revision": 42, "columns": ["id", "title", "revision"],
///  "rows": [[1, "Gig", 17], [2, "Talk", 40]], "next": 2}
/// ```
public struct SnapshotPage: Codable, JSONReadable, Sendable, Hashable {
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

    /// Reads a page from parsed JSON (see ``JSONParser``).
    ///
    /// - Throws: ``JSONShapeError`` when a member is missing or of the wrong kind.
    public init(json: JSONValue) throws(JSONShapeError) {
        let members = try JSONMembers(json, at: "")
        (type, revision, columns, next) = try Self.header(members)
        rows = try members.array("rows").enumerated().map { (index, row) throws(JSONShapeError) in
            guard case .array(let values) = row else { throw Self.notARow(index) }
            return values
        }
    }

    /// The page of `flat`'s members and rows.
    package init(_ flat: FlatSnapshotPage) {
        self.init(
            type: flat.type, revision: flat.revision, columns: flat.columns, rows: flat.rows.rows, next: flat.next)
    }

    /// The members other than `rows`.
    fileprivate static func header(_ members: JSONMembers) throws(JSONShapeError) -> (
        type: String, revision: Int64, columns: [String], next: JSONValue
    ) {
        (
            try members.string("type"), try members.int64("revision"), try members.strings("columns"),
            try members.value("next")
        )
    }

    fileprivate static func notARow(_ index: Int) -> JSONShapeError {
        JSONShapeError(.wrongType, "rows[\(index)]", "expected an array")
    }

    /// The page as compact JSON, members in the documented order.
    public func jsonBytes() -> [UInt8] {
        var writer = SnapshotPage.beginJSON(type: type, revision: revision, columns: columns, rowCount: rows.count)
        for row in rows { writer.value(.array(row)) }
        return SnapshotPage.endJSON(&writer, next: next)
    }

    /// Starts a page's JSON up to the opening of `rows`; write each row as an array, then call
    /// ``endJSON(_:next:)``. Stores that write rows straight from their cursor use the pair.
    package static func beginJSON(type: String, revision: Int64, columns: [String], rowCount: Int) -> JSONWriter {
        var writer = JSONWriter(capacity: 64 + rowCount * columns.count * 12)
        writer.beginObject()
        writer.key("type")
        writer.value(.string(type))
        writer.key("revision")
        writer.value(.int(revision))
        writer.key("columns")
        writer.value(.array(columns.map(JSONValue.string)))
        writer.key("rows")
        writer.beginArray()
        return writer
    }

    /// The `revision` of a page's JSON as ``beginJSON(type:revision:columns:rowCount:)`` wrote it
    /// (`{"type":"…","revision":N,`), read from its first bytes alone; `nil` for JSON in another
    /// shape. A server that keeps pages reads their revision this way without parsing the rows.
    package static func revision(ofJSON json: [UInt8]) -> Int64? {
        let opening = Array(#"{"type":""#.utf8)
        guard json.starts(with: opening) else { return nil }
        var index = opening.count
        // The type's string, escapes included, up to its closing quote.
        while index < json.count, json[index] != UInt8(ascii: "\"") {
            index += json[index] == UInt8(ascii: "\\") ? 2 : 1
        }
        let member = Array(#"","revision":"#.utf8)
        guard index < json.count, json[index...].starts(with: member) else { return nil }
        index += member.count
        var revision: Int64 = 0
        let start = index
        while index < json.count, let digit = Int64(exactly: json[index] &- UInt8(ascii: "0")), digit < 10 {
            let (shifted, overflow) = revision.multipliedReportingOverflow(by: 10)
            guard !overflow, case (let sum, false) = shifted.addingReportingOverflow(digit) else { return nil }
            revision = sum
            index += 1
        }
        guard index > start, index < json.count, json[index] == UInt8(ascii: ",") else { return nil }
        return revision
    }

    /// Closes `rows` and the page, and returns the JSON.
    package static func endJSON(_ writer: inout JSONWriter, next: JSONValue) -> [UInt8] {
        writer.endArray()
        writer.key("next")
        writer.value(next)
        writer.endObject()
        return writer.bytes
    }

    /// The page with the key, `fields` and `revision` alone, in that order.
    ///
    /// - Throws: ``SyncStoreError`` `unknownField` for a field the page does not have.
    package func selecting(_ fields: [String]) throws(SyncStoreError) -> SnapshotPage {
        let names = [columns[0]] + fields + [columns[columns.count - 1]]
        let positions = try names.map { (name) throws(SyncStoreError) -> Int in
            guard let position = columns.firstIndex(of: name) else { throw .unknownField(name, type: type) }
            return position
        }
        var selected = self
        selected.columns = names
        selected.rows = rows.map { row in positions.map { row[$0] } }
        return selected
    }
}

extension EntityType {
    /// This type with `fields` alone, in schema order (the shape of a column download's page).
    ///
    /// - Throws: ``SyncStoreError`` `unknownField` for a field the type does not have.
    package func selecting(_ fields: [String]) throws(SyncStoreError) -> EntityType {
        for name in fields where field(named: name) == nil { throw .unknownField(name, type: self.name) }
        var selected = self
        selected.fields = self.fields.filter { fields.contains($0.name) }
        return selected
    }
}

/// A snapshot page read for loading: the members of ``SnapshotPage``, the rows as
/// ``SnapshotCells``, parsed from the page's JSON without a value per cell.
///
/// ```swift
/// let page = try FlatSnapshotPage(json: body)
/// page.rows.count   // the number of rows
/// ```
package struct FlatSnapshotPage: Sendable, Hashable {
    package var type: String
    package var revision: Int64
    package var columns: [String]
    package var rows: SnapshotCells
    package var next: JSONValue

    /// Parses a page.
    ///
    /// - Throws: ``JSONParseError`` for text that is not JSON, ``JSONShapeError`` for JSON that is
    ///   not a page (the same errors, for the same text, as ``SnapshotPage/init(json:)`` after
    ///   ``JSONParser/parse(_:)``).
    package init(json bytes: some ContiguousBytes) throws {
        let (json, rows) = try JSONParser.parseSnapshotPage(bytes)
        let members = try JSONMembers(json, at: "")
        (type, revision, columns, next) = try SnapshotPage.header(members)
        guard let rows else {
            // Missing, or not an array: the error of a page read as values.
            _ = try members.array("rows")
            throw JSONShapeError(.wrongType, "rows", "expected an array")
        }
        if let index = rows.firstNonArrayRow { throw SnapshotPage.notARow(index) }
        self.rows = rows
    }

    /// The cells of `page`.
    package init(_ page: SnapshotPage) {
        (type, revision, columns, next) = (page.type, page.revision, page.columns, page.next)
        rows = SnapshotCells(page.rows)
    }
}
