import Foundation
import SeedSyncModel

/// The mapping from a stored row to wire values. The change log holds rows as `to_json` text
/// (written with ``CaptureSQL/sessionSettings``), read by ``init(json:of:table:)``; snapshot
/// pages read typed columns with ``init(cells:at:of:table:)``, which gives the same values
/// (`WireRowTests` holds the two side by side).
///
/// | field type | PostgreSQL columns | `to_json` | wire |
/// |---|---|---|---|
/// | integer | smallint, integer, bigint | number | integer |
/// | real | real, double precision, numeric | number | number |
/// | text | text, varchar | string | string |
/// | boolean | boolean | true/false | true/false |
/// | timestamp | timestamptz, timestamp | `2026-11-22T10:15:00.25+00:00` | `2026-11-22T10:15:00.25Z` (UTC) |
/// | blob | bytea | `"\\x0102"` | base64 |
///
/// The row must have exactly the schema's columns: one missing or extra means the table was
/// changed under the store, reported as `SyncStoreError.schemaMismatch`, never served wrong.
struct WireRow {
    /// Key, then fields in schema order.
    var values: [JSONValue]

    init(json bytes: some ContiguousBytes, of type: EntityType, table: String) throws(SyncStoreError) {
        guard case .object(let members)? = try? JSONParser.parse(bytes) else {
            throw .schemaMismatch("a row of \(table) could not be read")
        }
        guard let key = members[type.primaryKey.name], type.primaryKey.type.accepts(key) else {
            throw .schemaMismatch("\(table): the key column \(type.primaryKey.name) is missing or changed its type")
        }
        var values = [key]
        values.reserveCapacity(type.fields.count + 1)
        for field in type.fields {
            guard let value = members[field.name] else {
                throw .schemaMismatch("\(table) has no column \(field.name) any more")
            }
            values.append(try Self.wireValue(value, of: field, row: key, table: table))
        }
        if members.count != type.fields.count + 1 {
            let known = Set([type.primaryKey.name] + type.fields.map(\.name))
            let extra = members.keys.filter { !known.contains($0) }.sorted().joined(separator: ", ")
            throw .schemaMismatch("\(table) has columns the schema does not name: \(extra)")
        }
        self.values = values
    }

    private static func wireValue(_ value: JSONValue, of field: Field, row key: JSONValue, table: String)
        throws(SyncStoreError) -> JSONValue
    {
        if value == .null { return .null }
        let converted: JSONValue? =
            switch (field.type, value) {
            case (.timestamp, .string(let text)): timestamp(text)
            case (.blob, .string(let text)): blob(text)
            default: field.type.normalize(value)
            }
        guard let converted else {
            throw .schemaMismatch(
                "\(table)[\(key.keyString ?? "?")].\(field.name) holds a \(value.kindName) that is not \(field.type.expectation) on the wire (a changed column type, or a value such as NaN or infinity)"
            )
        }
        return converted
    }

    /// RFC 3339 in UTC with `Z`: `to_json` writes `+00:00` for timestamptz and no offset for timestamp.
    private static func timestamp(_ text: String) -> JSONValue? {
        var text = text
        if text.hasSuffix("+00:00") {
            text.removeLast(6)
            text += "Z"
        } else if text.count >= 19, !text.hasSuffix("Z"),
            !text.dropFirst(19).contains(where: { $0 == "+" || $0 == "-" })
        {
            text += "Z"
        }
        return RFC3339.isValid(text) ? .string(text) : nil
    }

    /// `\x0102…` (hex, as `bytea_output = hex` writes it) as canonical base64.
    private static func blob(_ text: String) -> JSONValue? {
        let hex = text.utf8
        guard hex.count >= 2, hex.count % 2 == 0, text.hasPrefix("\\x") else { return nil }
        var bytes = [UInt8]()
        bytes.reserveCapacity(hex.count / 2 - 1)
        var high: UInt8?
        for character in hex.dropFirst(2) {
            guard let nibble = Self.nibble(character) else { return nil }
            if let first = high {
                bytes.append(first << 4 | nibble)
                high = nil
            } else {
                high = nibble
            }
        }
        return .string(Data(bytes).base64EncodedString())
    }

    private static func nibble(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): character - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): character - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
