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
/// A column the schema names and the row lacks means the table was changed under the store,
/// reported as `SyncStoreError.schemaMismatch`, never served wrong; a column no version names
/// yet (added, and not yet upgraded to) is left out.
struct WireRow {
    /// Key, then fields in schema order.
    var values: [JSONValue]

    init(json bytes: some ContiguousBytes, of type: EntityType, table: String) throws(SyncStoreError) {
        guard let (value, numbers) = try? JSONParser.parseKeepingNumberText(bytes), case .object(let members) = value
        else {
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
            values.append(
                try Self.wireValue(
                    value, text: numbers[field.name], of: field.type, name: field.name, row: key, table: table))
        }
        self.values = values
    }

    /// A logged row (`to_json` text) as its key and the wire values of the members `fieldTypes`
    /// names, whatever schema version it was written in: members of other names (columns no
    /// version serves yet) are left out, and ``VersionProjection`` takes it from there.
    static func members(
        json bytes: some ContiguousBytes, key: PrimaryKey, fieldTypes: [String: FieldType], table: String
    ) throws(SyncStoreError) -> (key: JSONValue, attributes: [String: JSONValue]) {
        guard let (value, numbers) = try? JSONParser.parseKeepingNumberText(bytes), case .object(let members) = value
        else {
            throw .schemaMismatch("a row of \(table) could not be read")
        }
        guard let keyValue = members[key.name], key.type.accepts(keyValue) else {
            throw .schemaMismatch("\(table): the key column \(key.name) is missing or changed its type")
        }
        var attributes = [String: JSONValue](minimumCapacity: members.count)
        for (name, value) in members {
            guard let type = fieldTypes[name] else { continue }
            attributes[name] = try wireValue(
                value, text: numbers[name], of: type, name: name, row: keyValue, table: table)
        }
        return (keyValue, attributes)
    }

    /// The wire value of a member of a logged row: `text` is the number's text when the member
    /// is a number (a `numeric` column's exact digits).
    static func wireValue(
        _ value: JSONValue, text: String?, of type: FieldType, name: String, row key: JSONValue, table: String
    ) throws(SyncStoreError) -> JSONValue {
        if value == .null { return .null }
        if type == .real, let text, !DecimalText.fitsDouble(text) {
            throw .schemaMismatch(DecimalText.roundingMessage(table: table, row: key, field: name))
        }
        let converted: JSONValue? =
            switch (type, value) {
            case (.timestamp, .string(let text)): timestamp(text)
            case (.blob, .string(let text)): blob(text)
            case (.text, .int), (.text, .double): text.map(JSONValue.string)
            default: type.normalize(value)
            }
        guard let converted else {
            throw .schemaMismatch(
                "\(table)[\(key.keyString ?? "?")].\(name) holds a \(value.kindName) that is not \(type.expectation) on the wire (a changed column type, or a value such as NaN or infinity)"
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

/// Decimal text as `numeric` columns hold it, against a double.
enum DecimalText {
    /// Whether the decimal `text` is a double exactly as written: its digits are the shortest
    /// ones of the double nearest it (`12.50`, `0.1`, `1e300` are; a 39-digit value is not).
    static func fitsDouble(_ text: String) -> Bool {
        guard let double = Double(text), double.isFinite else { return false }
        return normalized(text) == normalized("\(double)")
    }

    /// Sign, significant digits and exponent of a decimal: `-12.50` and `-1.25e1` are alike.
    private static func normalized(_ text: String) -> String? {
        var rest = Substring(text)
        let negative = rest.first == "-"
        if negative { rest = rest.dropFirst() }
        let mantissa = rest.prefix { $0 != "e" && $0 != "E" }
        var exponent = Int(rest.dropFirst(mantissa.count).dropFirst()) ?? 0
        let parts = mantissa.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count) else { return nil }
        let fraction = parts.count == 2 ? parts[1] : ""
        exponent -= fraction.count
        var digits = Substring(String(parts[0] + fraction)).drop { $0 == "0" }
        while digits.last == "0" {
            digits = digits.dropLast()
            exponent += 1
        }
        if digits.isEmpty { return "0" }
        return "\(negative ? "-" : "")\(digits)e\(exponent)"
    }

    static func roundingMessage(table: String, row key: JSONValue, field: String) -> String {
        "\(table)[\(key.keyString ?? "?")].\(field) holds a decimal with more digits than a real keeps: it would be served rounded. Serve the column as an exact text field (a new field, a schema upgrade)"
    }
}
