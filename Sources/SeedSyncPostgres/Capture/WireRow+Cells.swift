import Foundation
import NIOCore
import PostgresNIO
import SeedSyncModel

extension WireRow {
    /// Where the key and each field are in a result row whose cells from `first` on are a
    /// table's columns (`t.*`, in the table's order, which need not be the schema's), found by
    /// name once per result.
    ///
    /// - Throws: `SyncStoreError.schemaMismatch` naming the column when one the schema names is
    ///   missing: the table changed under the store. Columns the schema does not name (added, and
    ///   not yet upgraded to) are left out.
    static func positions(in row: PostgresRandomAccessRow, from first: Int, of type: EntityType, table: String)
        throws(SyncStoreError) -> [Int]
    {
        var byName: [String: Int] = [:]
        for index in first..<row.count { byName[row[index].columnName] = index }
        let names = [type.primaryKey.name] + type.fields.map(\.name)
        let positions = try names.map { name throws(SyncStoreError) in
            guard let position = byName.removeValue(forKey: name) else {
                throw .schemaMismatch("\(table) has no column \(name) any more")
            }
            return position
        }
        return positions
    }

    /// Key, then fields, from the typed cells (binary format) at `positions` (from
    /// ``positions(in:from:of:table:)``) of a result row: what a snapshot page reads, without
    /// `to_json`. Gives exactly the values the JSON form gives for the same row (`WireRowTests`
    /// holds them side by side):
    ///
    /// - `real` and `numeric` become the decimal text `to_json` writes, parsed by the same JSON
    ///   parser; `double precision` is taken as is (its shortest text parses back to itself).
    /// - timestamps are microseconds since 2000-01-01 UTC, written as RFC 3339 in UTC with `Z`
    ///   and the fraction's trailing zeros cut, as `to_json` writes them (years 1 to 9999).
    /// - NaN, infinities and dates outside those years are refused, as in the JSON form.
    ///
    /// A cell of a type the field does not accept means the column was retyped under the store:
    /// `SyncStoreError.schemaMismatch`, never a guess.
    init(cells row: PostgresRandomAccessRow, at positions: [Int], of type: EntityType, table: String)
        throws(SyncStoreError)
    {
        let keyCell = row[positions[0]]
        guard let key = Self.value(of: keyCell, as: type.primaryKey.type.fieldType), type.primaryKey.type.accepts(key)
        else {
            throw .schemaMismatch(
                "\(table): the key column \(type.primaryKey.name) changed its type (now \(keyCell.dataType))")
        }
        var values = [key]
        values.reserveCapacity(type.fields.count + 1)
        for (field, position) in zip(type.fields, positions.dropFirst()) {
            let cell = row[position]
            guard let value = Self.value(of: cell, as: field.type) else {
                throw .schemaMismatch(
                    "\(table)[\(key.keyString ?? "?")].\(field.name) holds a \(cell.dataType) value that is not \(field.type.expectation) on the wire (a changed column type, or a value such as NaN or infinity)"
                )
            }
            values.append(value)
        }
        self.values = values
    }

    /// The wire value of `cell` for a field of `type`: `.null` for SQL NULL, nil when the cell's
    /// type or value has no wire form.
    static func value(of cell: PostgresCell, as type: FieldType) -> JSONValue? {
        guard var bytes = cell.bytes else { return .null }
        guard cell.format == .binary else { return nil }
        switch (type, cell.dataType) {
        case (.integer, .int2): return bytes.readInteger(as: Int16.self).map { .int(Int64($0)) }
        case (.integer, .int4): return bytes.readInteger(as: Int32.self).map { .int(Int64($0)) }
        case (.integer, .int8): return bytes.readInteger(as: Int64.self).map { .int($0) }
        case (.real, .float8):
            return bytes.readInteger(as: UInt64.self).flatMap { type.normalize(.double(Double(bitPattern: $0))) }
        case (.real, .float4):
            guard let bits = bytes.readInteger(as: UInt32.self), Float(bitPattern: bits).isFinite else { return nil }
            return number(String(describing: Float(bitPattern: bits)), as: type)
        case (.real, .numeric):
            return numericText(&bytes).flatMap { DecimalText.fitsDouble($0) ? number($0, as: type) : nil }
        case (.text, .text), (.text, .varchar), (.text, .bpchar): return text(&bytes)
        case (.text, .uuid): return uuidText(&bytes).map(JSONValue.string)
        case (.text, .numeric): return numericText(&bytes).map(JSONValue.string)
        case (.text, .date):
            return bytes.readInteger(as: Int32.self).flatMap(dateText(daysSince2000:)).map { .string($0) }
        case (.text, .time):
            return bytes.readInteger(as: Int64.self).flatMap(timeText(microseconds:)).map { .string($0) }
        case (.text, .interval): return intervalText(&bytes).map(JSONValue.string)
        case (.text, let other) where other.rawValue >= firstUserTypeID: return text(&bytes)  // an enum's label
        case (.boolean, .bool): return bytes.readInteger(as: UInt8.self).map { .bool($0 != 0) }
        case (.timestamp, .timestamptz), (.timestamp, .timestamp):
            return bytes.readInteger(as: Int64.self).flatMap(timestampText(microsecondsSince2000:)).map { .string($0) }
        case (.blob, .bytea): return .string(Data(bytes.readableBytesView).base64EncodedString())
        case (.json, .json): return text(&bytes).flatMap(json)
        case (.json, .jsonb):
            guard bytes.readInteger(as: UInt8.self) == 1 else { return nil }  // jsonb's binary format version
            return text(&bytes).flatMap(json)
        case (.json, let array) where ArrayCell.types.contains(array): return ArrayCell.value(&bytes)
        default: return nil
        }
    }

    /// The first object id of types made in a database (enums among them), not built in.
    private static let firstUserTypeID: UInt32 = 16_384

    private static func text(_ bytes: inout ByteBuffer) -> JSONValue? {
        bytes.readString(length: bytes.readableBytes).map(JSONValue.string)
    }

    /// The JSON value of a `json` field from JSON text (JSON's `null` is the field's null, as
    /// `to_json` writes it too).
    private static func json(_ text: JSONValue) -> JSONValue? {
        guard case .string(let text) = text else { return nil }
        return try? JSONParser.parse(Array(text.utf8))
    }

    /// `text` as the JSON form reads a number: the same parser, the same rules.
    private static func number(_ text: String, as type: FieldType) -> JSONValue? {
        (try? JSONParser.parse(Array(text.utf8))).flatMap(type.normalize)
    }
}

/// A `uuid` in binary format as `uuid_out` writes it: `a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11`.
func uuidText(_ bytes: inout ByteBuffer) -> String? {
    guard let raw = bytes.readBytes(length: 16) else { return nil }
    return [raw[0..<4], raw[4..<6], raw[6..<8], raw[8..<10], raw[10..<16]].map(\.lowercaseHex).joined(separator: "-")
}

/// A PostgreSQL array in binary format as the JSON `to_json` writes for it: nested arrays per
/// dimension, elements as ``WireRow`` reads them (numbers, strings, booleans, `null`).
enum ArrayCell {
    /// The array types read: of the elements ``element(_:_:)`` reads (`TableCheck.arrayTypes`).
    static let types: Set<PostgresDataType> = [
        .int2Array, .int4Array, .int8Array, .float4Array, .float8Array, PostgresDataType(1231), .textArray,
        .varcharArray, .bpcharArray, .boolArray, .uuidArray,
    ]

    /// The array's JSON, or nil for an array of an element type this does not read.
    static func value(_ bytes: inout ByteBuffer) -> JSONValue? {
        guard let dimensions = bytes.readInteger(as: Int32.self), bytes.readInteger(as: Int32.self) != nil,
            let element = bytes.readInteger(as: UInt32.self), (0...6).contains(dimensions)
        else { return nil }
        var sizes: [Int] = []
        for _ in 0..<dimensions {
            guard let size = bytes.readInteger(as: Int32.self), bytes.readInteger(as: Int32.self) != nil, size >= 0
            else { return nil }
            sizes.append(Int(size))
        }
        guard !sizes.isEmpty else { return .array([]) }
        return read(&bytes, sizes: sizes[...], element: PostgresDataType(element))
    }

    private static func read(_ bytes: inout ByteBuffer, sizes: ArraySlice<Int>, element: PostgresDataType) -> JSONValue?
    {
        var items: [JSONValue] = []
        for _ in 0..<sizes.first! {
            if sizes.count > 1 {
                guard let nested = read(&bytes, sizes: sizes.dropFirst(), element: element) else { return nil }
                items.append(nested)
                continue
            }
            guard let length = bytes.readInteger(as: Int32.self) else { return nil }
            guard length >= 0 else {
                items.append(.null)
                continue
            }
            guard var item = bytes.readSlice(length: Int(length)), let value = Self.element(&item, element) else {
                return nil
            }
            items.append(value)
        }
        return .array(items)
    }

    /// One element as `to_json` writes it: a number's digits as its JSON number, text as a string.
    private static func element(_ bytes: inout ByteBuffer, _ type: PostgresDataType) -> JSONValue? {
        switch type {
        case .int2: bytes.readInteger(as: Int16.self).map { .int(Int64($0)) }
        case .int4: bytes.readInteger(as: Int32.self).map { .int(Int64($0)) }
        case .int8: bytes.readInteger(as: Int64.self).map { .int($0) }
        case .float8:
            bytes.readInteger(as: UInt64.self).flatMap { bits in
                Double(bitPattern: bits).isFinite ? .double(Double(bitPattern: bits)) : nil
            }
        case .float4:
            bytes.readInteger(as: UInt32.self).flatMap { bits in
                Float(bitPattern: bits).isFinite ? try? JSONParser.parse(Array("\(Float(bitPattern: bits))".utf8)) : nil
            }
        case .numeric: numericText(&bytes).flatMap { try? JSONParser.parse(Array($0.utf8)) }
        case .text, .varchar, .bpchar: bytes.readString(length: bytes.readableBytes).map(JSONValue.string)
        case .bool: bytes.readInteger(as: UInt8.self).map { .bool($0 != 0) }
        case .uuid: uuidText(&bytes).map(JSONValue.string)
        default: nil
        }
    }
}

/// The text `numeric_out` writes for a `numeric` in binary format (`-12.50`), nil for NaN and
/// the infinities.
func numericText(_ bytes: inout ByteBuffer) -> String? {
    guard let count = bytes.readInteger(as: Int16.self), let weight = bytes.readInteger(as: Int16.self),
        let sign = bytes.readInteger(as: UInt16.self), let scale = bytes.readInteger(as: Int16.self),
        sign == 0 || sign == 0x4000, count >= 0, scale >= 0
    else { return nil }
    var digits: [Int16] = []
    for _ in 0..<count {
        guard let digit = bytes.readInteger(as: Int16.self) else { return nil }
        digits.append(digit)
    }
    // Digit k is worth 10000^(weight - k).
    func digit(_ k: Int) -> Int16 { digits.indices.contains(k) ? digits[k] : 0 }
    func padded(_ value: Int16) -> String { String(repeating: "0", count: 4 - String(value).count) + String(value) }
    var text = sign == 0x4000 ? "-" : ""
    if weight < 0 {
        text += "0"
    } else {
        text += String(digit(0)) + (0..<Int(weight)).map { padded(digit($0 + 1)) }.joined()
    }
    if scale > 0 {
        let groups = (Int(scale) + 3) / 4
        let fraction = (0..<groups).map { padded(digit(Int(weight) + 1 + $0)) }.joined()
        text += "." + fraction.prefix(Int(scale))
    }
    return text
}

/// `2026-11-28` for a binary `date` (days since 2000-01-01), as `to_json` writes it; nil for
/// `±infinity` and years outside 1 to 9999.
func dateText(daysSince2000 days: Int32) -> String? {
    guard days != .min, days != .max else { return nil }
    let (year, month, day) = RFC3339.civil(daysSince1970: Int64(days) + 10_957)
    guard (1...9999).contains(year) else { return nil }
    return digits(year, 4) + "-" + digits(month, 2) + "-" + digits(day, 2)
}

/// `10:15:00.25` for a binary `time` (microseconds since midnight), as `to_json` writes it: the
/// fraction's trailing zeros cut.
func timeText(microseconds: Int64) -> String? {
    guard (0...86_400_000_000).contains(microseconds) else { return nil }
    let seconds = microseconds / 1_000_000
    return digits(seconds / 3600, 2) + ":" + digits(seconds / 60 % 60, 2) + ":" + digits(seconds % 60, 2)
        + fractionText(microseconds % 1_000_000)
}

/// An `interval` in binary format (microseconds, days, months) as PostgreSQL writes it under
/// `IntervalStyle = iso_8601` (`P1Y2M3DT4H5M6.5S`, `PT0S`, each part with its own sign), which
/// the store's sessions and capture functions use (`CaptureSQL.sessionSettings`).
func intervalText(_ bytes: inout ByteBuffer) -> String? {
    guard let time = bytes.readInteger(as: Int64.self), let days = bytes.readInteger(as: Int32.self),
        let months = bytes.readInteger(as: Int32.self)
    else { return nil }
    let (years, month) = (months / 12, months % 12)
    let hours = time / 3_600_000_000
    let minutes = (time - hours * 3_600_000_000) / 60_000_000
    let rest = time - hours * 3_600_000_000 - minutes * 60_000_000
    let (seconds, micros) = (rest / 1_000_000, rest % 1_000_000)
    guard years != 0 || month != 0 || days != 0 || time != 0 else { return "PT0S" }
    func part(_ value: Int64, _ unit: String) -> String { value == 0 ? "" : "\(value)\(unit)" }
    var text = "P" + part(Int64(years), "Y") + part(Int64(month), "M") + part(Int64(days), "D")
    if time != 0 { text += "T" + part(hours, "H") + part(minutes, "M") }
    if seconds != 0 || micros != 0 {
        text += (seconds < 0 || micros < 0 ? "-" : "") + "\(abs(seconds))" + fractionText(abs(micros)) + "S"
    }
    return text
}

/// `.25` for 250,000 microseconds, nothing for none: six digits, trailing zeros cut.
private func fractionText(_ micros: Int64) -> String {
    guard micros != 0 else { return "" }
    var text = digits(micros, 6)
    while text.last == "0" { text.removeLast() }
    return "." + text
}

/// `value` in decimal, zero-padded to `width` digits.
private func digits(_ value: Int64, _ width: Int) -> String {
    let text = String(value)
    return String(repeating: "0", count: max(0, width - text.count)) + text
}

/// RFC 3339 in UTC for a binary timestamp (microseconds since 2000-01-01): `2026-11-22T10:15:00.25Z`;
/// nil for `±infinity` and years outside 1 to 9999, which `to_json` cannot write as RFC 3339.
func timestampText(microsecondsSince2000 micros: Int64) -> String? {
    let perDay: Int64 = 86_400_000_000
    let (quotient, remainder) = micros.quotientAndRemainder(dividingBy: perDay)
    let days = remainder < 0 ? quotient - 1 : quotient
    let timeOfDay = remainder < 0 ? remainder + perDay : remainder
    let (year, month, day) = RFC3339.civil(daysSince1970: days + 10_957)
    guard (1...9999).contains(year) else { return nil }
    let seconds = timeOfDay / 1_000_000
    let fraction = timeOfDay % 1_000_000
    var text: [UInt8] = []
    text.reserveCapacity(27)
    func append(_ value: Int64, width: Int, then separator: Unicode.Scalar?) {
        var divisor: Int64 = 1
        for _ in 1..<width { divisor *= 10 }
        while divisor > 0 {
            text.append(UInt8(ascii: "0") + UInt8(value / divisor % 10))
            divisor /= 10
        }
        if let separator { text.append(UInt8(ascii: separator)) }
    }
    append(year, width: 4, then: "-")
    append(month, width: 2, then: "-")
    append(day, width: 2, then: "T")
    append(seconds / 3600, width: 2, then: ":")
    append(seconds / 60 % 60, width: 2, then: ":")
    append(seconds % 60, width: 2, then: fraction == 0 ? nil : ".")
    if fraction != 0 {
        append(fraction, width: 6, then: nil)
        while text.last == UInt8(ascii: "0") { text.removeLast() }
    }
    text.append(UInt8(ascii: "Z"))
    return String(decoding: text, as: UTF8.self)
}
