import Foundation

extension FieldType {
    /// The canonical form of `value` for a field of this type, or `nil` when it does not fit.
    ///
    /// `real` accepts integers and stores them as reals, `blob` accepts base64 and re-encodes it
    /// canonically, `timestamp` accepts RFC 3339 text only, `json` any value (numbers finite, as
    /// JSON has them). `null` is not handled here.
    public func normalize(_ value: JSONValue) -> JSONValue? {
        switch (self, value) {
        case (.integer, .int), (.text, .string), (.boolean, .bool): return value
        case (.json, _): return value.isFinite ? value : nil
        case (.real, .int(let number)): return .double(Double(number))
        case (.real, .double(let number)): return number.isFinite ? value : nil
        case (.timestamp, .string(let text)): return RFC3339.isValid(text) ? value : nil
        case (.blob, .string(let text)):
            return Data(base64Encoded: text).map { .string($0.base64EncodedString()) }
        default: return nil
        }
    }

    /// A short description of what a value of this type looks like in JSON, for error messages.
    public var expectation: String {
        switch self {
        case .integer: "an integer"
        case .real: "a number"
        case .text: "a string"
        case .boolean: "true or false"
        case .timestamp: "an RFC 3339 timestamp string"
        case .blob: "a base64 string"
        case .json: "a JSON value"
        }
    }
}

extension JSONValue {
    /// Whether a string in the value (a member name included) holds U+0000.
    var holdsNUL: Bool {
        switch self {
        case .string(let text): text.utf8.contains(0)
        case .array(let values): values.contains(where: \.holdsNUL)
        case .object(let members): members.contains { $0.key.utf8.contains(0) || $0.value.holdsNUL }
        default: false
        }
    }

    /// Whether every number in the value is finite, as JSON can write it.
    var isFinite: Bool {
        switch self {
        case .double(let number): number.isFinite
        case .array(let values): values.allSatisfy(\.isFinite)
        case .object(let members): members.values.allSatisfy(\.isFinite)
        default: true
        }
    }
}

extension SnapshotCells {
    /// Whether `cell` is a value a field of `type` takes as it is (`null` only when `nullable`):
    /// what ``FieldType/normalize(_:)`` accepts, read from the cell without making a value.
    package func fits(_ cell: Cell, _ type: FieldType, nullable: Bool) -> Bool {
        switch (cell.kind, type) {
        case (.null, _): nullable
        case (.int, .integer), (.string, .text), (.bool, .boolean), (.int, .real): true
        case (.double, .real), (_, .json): value(of: cell).isFinite
        case (.string, .timestamp): withBytes(of: cell, RFC3339.isValid)
        case (.string, .blob): type.normalize(value(of: cell)) != nil
        default: false
        }
    }

    /// Whether `cell` is a key of this type, as ``KeyType/accepts(_:)`` says.
    package func fits(_ cell: Cell, key type: KeyType) -> Bool {
        switch (cell.kind, type) {
        case (.int, .integer): true
        case (.string, .text): (1...1024).contains(byteCount(of: cell))
        default: false
        }
    }
}

extension KeyType {
    /// Whether `value` is a key of this type: an integer, or a non-empty string of at most 1,024 bytes.
    public func accepts(_ value: JSONValue) -> Bool {
        switch (self, value) {
        case (.integer, .int): true
        case (.text, .string(let text)): !text.isEmpty && text.utf8.count <= 1024
        default: false
        }
    }

    /// Parses a key from its string form (a query parameter or an `attributes` key).
    public func key(from text: String) -> JSONValue? {
        switch self {
        case .integer:
            guard let number = Int64(text), String(number) == text else { return nil }
            return .int(number)
        case .text:
            return accepts(.string(text)) ? .string(text) : nil
        }
    }
}

/// RFC 3339 date-time checks: `2026-11-22T10:15:00Z`, `2026-11-22T10:15:00.250+01:00`.
public enum RFC3339 {
    /// Year, month and day of a day count from 1970-01-01, proleptic Gregorian (Howard Hinnant's
    /// `civil_from_days`): for writers of timestamps that do without `DateFormatter`.
    package static func civil(daysSince1970 days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// Whether `text` is an RFC 3339 `date-time` (a space or lowercase `t` between date and time is accepted).
    public static func isValid(_ text: String) -> Bool {
        var text = text
        return text.withUTF8(isValid)
    }

    /// Whether the UTF-8 bytes `b` are an RFC 3339 `date-time`, as ``isValid(_:)`` says.
    package static func isValid(_ b: UnsafeBufferPointer<UInt8>) -> Bool {
        guard b.count >= 20, b[4] == UInt8(ascii: "-"), b[7] == UInt8(ascii: "-"),
            b[10] == UInt8(ascii: "T") || b[10] == UInt8(ascii: "t") || b[10] == UInt8(ascii: " "),
            b[13] == UInt8(ascii: ":"), b[16] == UInt8(ascii: ":"),
            let year = number(b, 0, 4), let month = number(b, 5, 2), let day = number(b, 8, 2),
            let hour = number(b, 11, 2), let minute = number(b, 14, 2), let second = number(b, 17, 2),
            year >= 0, (1...12).contains(month), (1...daysIn(month, of: year)).contains(day),
            hour < 24, minute < 60, second <= 60
        else { return false }
        var index = 19
        if b[index] == UInt8(ascii: ".") {
            index += 1
            let start = index
            while index < b.count, isDigit(b[index]) { index += 1 }
            guard index > start else { return false }
        }
        return isValidOffset(b[index...])
    }

    private static func isValidOffset(_ o: Slice<UnsafeBufferPointer<UInt8>>) -> Bool {
        if o.count == 1 { return o.first == UInt8(ascii: "Z") || o.first == UInt8(ascii: "z") }
        let o = UnsafeBufferPointer(rebasing: o)
        guard o.count == 6, o[0] == UInt8(ascii: "+") || o[0] == UInt8(ascii: "-"), o[3] == UInt8(ascii: ":"),
            let hours = number(o, 1, 2), let minutes = number(o, 4, 2)
        else { return false }
        return hours < 24 && minutes < 60
    }

    private static func number(_ b: UnsafeBufferPointer<UInt8>, _ start: Int, _ count: Int) -> Int? {
        var value = 0
        for byte in b[start..<start + count] {
            guard isDigit(byte) else { return nil }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return value
    }

    private static func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }

    private static func daysIn(_ month: Int, of year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}
