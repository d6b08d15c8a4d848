public import Foundation

/// Parses JSON text into a ``JSONValue``, several times faster than `JSONDecoder` on Linux.
///
/// Clients parse every snapshot page and change feed with it: a million-row download is over a
/// hundred megabytes of JSON, and `JSONDecoder` (about 45 MB/s on Linux, more for `JSONValue`,
/// which it can only reach by trying each type in turn) would dominate the build.
///
/// It accepts exactly RFC 8259 JSON in UTF-8: no comments, no trailing commas, no leading zeros,
/// no invalid UTF-8 or lone surrogates, no duplicate object keys, nesting at most ``maxDepth``
/// deep, and nothing but whitespace after the value. Integers that fit `Int64` become `.int`,
/// other numbers `.double`.
///
/// ```swift
/// let value = try JSONParser.parse(Array(#"{"rows": [[1, "Gig"]]}"#.utf8))
/// // value == .object(["rows": .array([.array([1, "Gig"])])])
/// ```
public enum JSONParser {
    /// The deepest nesting of arrays and objects accepted.
    public static let maxDepth = 64

    /// Parses one JSON document.
    ///
    /// - Throws: ``JSONParseError`` with the byte offset of the first problem.
    public static func parse(_ bytes: some ContiguousBytes) throws(JSONParseError) -> JSONValue {
        let result: Result<JSONValue, JSONParseError> = bytes.withUnsafeBytes { raw in
            var parser = Scanner(bytes: raw.bindMemory(to: UInt8.self))
            return Result { () throws(JSONParseError) in try parser.parseDocument() }
        }
        return try result.get()
    }

    /// Parses a snapshot page: its members, but `rows`, if it is an array, read into
    /// ``SnapshotCells`` (and `null` in the members); the same JSON is accepted and refused as by
    /// ``parse(_:)``.
    ///
    /// - Throws: ``JSONParseError`` with the byte offset of the first problem.
    package static func parseSnapshotPage(_ bytes: some ContiguousBytes) throws(JSONParseError) -> (
        members: JSONValue, rows: SnapshotCells?
    ) {
        let result: Result<(JSONValue, SnapshotCells?), JSONParseError> = bytes.withUnsafeBytes { raw in
            var parser = Scanner(bytes: raw.bindMemory(to: UInt8.self))
            parser.readsRows = true
            return Result { () throws(JSONParseError) in (try parser.parseDocument(), parser.rows) }
        }
        return try result.get()
    }

    /// Parses one JSON document, and keeps the text of each number that is a member of the
    /// top-level object, by member name: what a decimal column's exact value is when its row comes
    /// as JSON (`{"price": 123456789012345678901234567890.5}` would lose digits as a `Double`).
    ///
    /// - Throws: ``JSONParseError`` with the byte offset of the first problem.
    package static func parseKeepingNumberText(_ bytes: some ContiguousBytes) throws(JSONParseError) -> (
        value: JSONValue, numbers: [String: String]
    ) {
        let result: Result<(JSONValue, [String: String]), JSONParseError> = bytes.withUnsafeBytes { raw in
            var parser = Scanner(bytes: raw.bindMemory(to: UInt8.self))
            parser.memberNumbers = [:]
            return Result { () throws(JSONParseError) in (try parser.parseDocument(), parser.memberNumbers ?? [:]) }
        }
        return try result.get()
    }
}

/// JSON text that ``JSONParser`` refused.
public struct JSONParseError: Error, CustomStringConvertible, Sendable, Hashable {
    /// What is wrong. New codes may be added: a `switch` over it needs a `default`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case invalidSyntax, tooDeep
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The text is not JSON (RFC 8259) at ``JSONParseError/offset``.
        public static let invalidSyntax = Code(.invalidSyntax)
        /// Arrays and objects are nested deeper than ``JSONParser/maxDepth``.
        public static let tooDeep = Code(.tooDeep)

        public var description: String { base.rawValue }
    }

    public let code: Code
    /// The byte offset of the problem in the text.
    public let offset: Int
    public let reason: String

    public var description: String { "invalid JSON at byte \(offset): \(reason)" }
}

/// The recursive-descent scanner behind ``JSONParser``, over the bytes of one document.
private struct Scanner {
    let bytes: UnsafeBufferPointer<UInt8>
    var index = 0
    var depth = 0
    /// When set, the text of every number that is a member of the top-level object, by name.
    var memberNumbers: [String: String]?
    /// Whether the top-level object's `rows` array is read into ``rows``.
    var readsRows = false
    var rows: SnapshotCells?

    init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    mutating func parseDocument() throws(JSONParseError) -> JSONValue {
        let value = try parseValue()
        skipWhitespace()
        guard index == bytes.count else { throw failure("unexpected text after the value") }
        return value
    }

    private mutating func parseValue() throws(JSONParseError) -> JSONValue {
        skipWhitespace()
        guard index < bytes.count else { throw failure("unexpected end of text") }
        switch bytes[index] {
        case Byte.quote: return .string(try parseString())
        case Byte.openBracket: return try parseArray()
        case Byte.openBrace: return try parseObject()
        case Byte.t:
            try expect("true")
            return .bool(true)
        case Byte.f:
            try expect("false")
            return .bool(false)
        case Byte.n:
            try expect("null")
            return .null
        case Byte.minus, Byte.zero...Byte.nine: return try parseNumber()
        default: throw failure("unexpected character")
        }
    }

    private mutating func parseArray() throws(JSONParseError) -> JSONValue {
        try enter()
        defer { depth -= 1 }
        var items: [JSONValue] = []
        guard !skipEmpty(closing: Byte.closeBracket) else { return .array(items) }
        while true {
            items.append(try parseValue())
            guard try separator(closing: Byte.closeBracket) else { break }
        }
        return .array(items)
    }

    private mutating func parseObject() throws(JSONParseError) -> JSONValue {
        try enter()
        defer { depth -= 1 }
        var members: [String: JSONValue] = [:]
        guard !skipEmpty(closing: Byte.closeBrace) else { return .object(members) }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == Byte.quote else { throw failure("expected a member name") }
            let start = index
            let name = try parseString()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == Byte.colon else { throw failure("expected ':'") }
            index += 1
            skipWhitespace()
            let valueStart = index
            let value: JSONValue
            if depth == 1, readsRows, name == "rows", index < bytes.count, bytes[index] == Byte.openBracket {
                rows = try parseRows()
                value = .null
            } else {
                value = try parseValue()
            }
            if depth == 1, memberNumbers != nil, case .int = value {
                memberNumbers?[name] = String(
                    decoding: UnsafeBufferPointer(rebasing: bytes[valueStart..<index]), as: UTF8.self)
            } else if depth == 1, memberNumbers != nil, case .double = value {
                memberNumbers?[name] = String(
                    decoding: UnsafeBufferPointer(rebasing: bytes[valueStart..<index]), as: UTF8.self)
            }
            guard members.updateValue(value, forKey: name) == nil else {
                throw JSONParseError(
                    code: .invalidSyntax, offset: start, reason: "duplicate member '\(name.clippedForMessage)'")
            }
            guard try separator(closing: Byte.closeBrace) else { break }
        }
        return .object(members)
    }

    /// An array of rows, each an array of values, whose opening bracket is at `index`, as cells.
    /// A row that is not an array is parsed, left out and marked (the page is refused later).
    private mutating func parseRows() throws(JSONParseError) -> SnapshotCells {
        var cells = SnapshotCells()
        // At most a cell per two bytes and fewer bytes of text than of JSON: room reserved but never
        // touched costs no memory, and buffers that never grow are never copied. Up to a bound, so
        // that a large page does not reserve eight times its size.
        let cellCount = min(bytes.count / 2, 1 << 20)
        cells.reserveCapacity(cells: cellCount, rows: cellCount / 2, bytes: bytes.count)
        try enter()
        defer { depth -= 1 }
        guard !skipEmpty(closing: Byte.closeBracket) else { return cells }
        while true {
            skipWhitespace()
            if index < bytes.count, bytes[index] == Byte.openBracket {
                try parseRow(into: &cells)
            } else {
                _ = try parseValue()
                cells.appendNonArrayRow()
            }
            guard try separator(closing: Byte.closeBracket) else { break }
        }
        return cells
    }

    /// One row whose opening bracket is at `index`: strings into the cells' text, numbers and
    /// literals as they are, arrays and objects as values.
    private mutating func parseRow(into cells: inout SnapshotCells) throws(JSONParseError) {
        try enter()
        defer { depth -= 1 }
        defer { cells.endRow() }
        guard !skipEmpty(closing: Byte.closeBracket) else { return }
        while true {
            skipWhitespace()
            if index < bytes.count, bytes[index] == Byte.quote {
                try scanString { cells.appendString($0) }
            } else {
                cells.append(try parseValue())
            }
            guard try separator(closing: Byte.closeBracket) else { break }
        }
    }

    /// After an opening bracket or brace: whether `closing` follows at once (consumed).
    private mutating func skipEmpty(closing: UInt8) -> Bool {
        skipWhitespace()
        guard index < bytes.count, bytes[index] == closing else { return false }
        index += 1
        return true
    }

    /// After an item: `true` at a comma (another item follows), `false` at `closing` (consumed).
    private mutating func separator(closing: UInt8) throws(JSONParseError) -> Bool {
        skipWhitespace()
        guard index < bytes.count else { throw failure("unexpected end of text") }
        let byte = bytes[index]
        index += 1
        if byte == Byte.comma { return true }
        if byte == closing { return false }
        index -= 1
        throw failure(closing == Byte.closeBracket ? "expected ',' or ']'" : "expected ',' or '}'")
    }

    /// Steps over an opening bracket or brace, one level deeper; the caller steps back out.
    private mutating func enter() throws(JSONParseError) {
        guard depth < JSONParser.maxDepth else {
            throw failure("nested more than \(JSONParser.maxDepth) deep", code: .tooDeep)
        }
        depth += 1
        index += 1
    }

    // MARK: Strings

    /// A string whose opening quote is at `index`.
    private mutating func parseString() throws(JSONParseError) -> String {
        try scanString { String(decoding: $0, as: UTF8.self) }
    }

    /// Reads the string whose opening quote is at `index` and passes its bytes, unescaped and
    /// checked to be UTF-8, to `body`: straight from the text when it has no escape.
    private mutating func scanString<R>(_ body: (UnsafeBufferPointer<UInt8>) -> R) throws(JSONParseError) -> R {
        index += 1
        let start = index
        var isASCII = true
        while index < bytes.count {
            let byte = bytes[index]
            if byte == Byte.quote {
                let text = UnsafeBufferPointer(rebasing: bytes[start..<index])
                index += 1
                try checkUTF8(text, isASCII: isASCII, at: start)
                return body(text)
            }
            if byte == Byte.backslash { return try scanEscapedString(from: start, body) }
            if byte < 0x20 { throw failure("control character in a string") }
            isASCII = isASCII && byte < 0x80
            index += 1
        }
        throw failure("unterminated string")
    }

    /// The rest of a string that holds escapes, decoded into a buffer.
    private mutating func scanEscapedString<R>(from start: Int, _ body: (UnsafeBufferPointer<UInt8>) -> R)
        throws(JSONParseError) -> R
    {
        var buffer = Array(bytes[start..<index])
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            switch byte {
            case Byte.quote:
                return try buffer.withUnsafeBufferPointer { (text) throws(JSONParseError) in
                    try checkUTF8(text, isASCII: false, at: start)
                    return body(text)
                }
            case Byte.backslash: try appendEscape(to: &buffer)
            case 0..<0x20:
                index -= 1
                throw failure("control character in a string")
            default: buffer.append(byte)
            }
        }
        throw failure("unterminated string")
    }

    private mutating func appendEscape(to buffer: inout [UInt8]) throws(JSONParseError) {
        guard index < bytes.count else { throw failure("unterminated string") }
        let byte = bytes[index]
        index += 1
        switch byte {
        case Byte.quote, Byte.backslash, Byte.slash: buffer.append(byte)
        case Byte.b: buffer.append(0x08)
        case Byte.f: buffer.append(0x0C)
        case Byte.n: buffer.append(0x0A)
        case Byte.r: buffer.append(0x0D)
        case Byte.t: buffer.append(0x09)
        case Byte.u: appendUTF8(of: try parseUnicodeEscape(), to: &buffer)
        default:
            index -= 1
            throw failure("invalid escape")
        }
    }

    /// The scalar of a `\uXXXX` escape (the `\u` consumed), joining a surrogate pair.
    private mutating func parseUnicodeEscape() throws(JSONParseError) -> Unicode.Scalar {
        let first = try parseHex4()
        if (0xDC00...0xDFFF).contains(first) { throw failure("lone low surrogate") }
        guard (0xD800...0xDBFF).contains(first) else { return Unicode.Scalar(first)! }
        guard index + 1 < bytes.count, bytes[index] == Byte.backslash, bytes[index + 1] == Byte.u else {
            throw failure("lone high surrogate")
        }
        index += 2
        let second = try parseHex4()
        guard (0xDC00...0xDFFF).contains(second) else { throw failure("lone high surrogate") }
        return Unicode.Scalar(0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00))!
    }

    private mutating func parseHex4() throws(JSONParseError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw failure("unterminated string") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8 =
                switch byte {
                case Byte.zero...Byte.nine: byte - Byte.zero
                case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
                default: throw failure("invalid \\u escape")
                }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }

    private func appendUTF8(of scalar: Unicode.Scalar, to buffer: inout [UInt8]) {
        UTF8.encode(scalar) { buffer.append($0) }
    }

    /// Fails unless `text` is valid UTF-8 (ASCII needs no check).
    private func checkUTF8(_ text: UnsafeBufferPointer<UInt8>, isASCII: Bool, at start: Int) throws(JSONParseError) {
        guard !isASCII else { return }
        var iterator = text.makeIterator()
        var decoder = UTF8()
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue: continue
            case .emptyInput: return
            case .error:
                throw JSONParseError(code: .invalidSyntax, offset: start, reason: "a string is not valid UTF-8")
            }
        }
    }

    // MARK: Numbers, literals, whitespace

    /// A number as RFC 8259 writes it: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    private mutating func parseNumber() throws(JSONParseError) -> JSONValue {
        let start = index
        let negative = bytes[index] == Byte.minus
        if negative { index += 1 }
        let digitsStart = index
        var magnitude: UInt64 = 0
        var overflow = false
        while index < bytes.count, let digit = digit(at: index) {
            let (times10, overflow1) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(UInt64(digit))
            overflow = overflow || overflow1 || overflow2
            magnitude = sum
            index += 1
        }
        let digitCount = index - digitsStart
        guard digitCount > 0 else { throw failure("invalid number") }
        guard bytes[digitsStart] != Byte.zero || digitCount == 1 else {
            throw JSONParseError(code: .invalidSyntax, offset: start, reason: "invalid number (leading zero)")
        }
        let isInteger = index >= bytes.count || !Byte.isFractionOrExponent(bytes[index])
        if isInteger, !overflow, let value = Self.int64(magnitude, negative: negative) { return .int(value) }
        if !isInteger { try skipFractionAndExponent() }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        guard let value = Double(text), value.isFinite else {
            throw JSONParseError(code: .invalidSyntax, offset: start, reason: "number out of range")
        }
        return .double(value)
    }

    private mutating func skipFractionAndExponent() throws(JSONParseError) {
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            try skipDigits()
        }
        if index < bytes.count, bytes[index] | 0x20 == UInt8(ascii: "e") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == Byte.minus { index += 1 }
            try skipDigits()
        }
    }

    private mutating func skipDigits() throws(JSONParseError) {
        let start = index
        while index < bytes.count, digit(at: index) != nil { index += 1 }
        guard index > start else { throw failure("invalid number") }
    }

    private func digit(at position: Int) -> UInt8? {
        let byte = bytes[position]
        return byte >= Byte.zero && byte <= Byte.nine ? byte - Byte.zero : nil
    }

    private static func int64(_ magnitude: UInt64, negative: Bool) -> Int64? {
        if negative {
            return magnitude <= UInt64(Int64.max) + 1 ? Int64(truncatingIfNeeded: 0 &- magnitude) : nil
        }
        return magnitude <= UInt64(Int64.max) ? Int64(magnitude) : nil
    }

    private mutating func expect(_ literal: StaticString) throws(JSONParseError) {
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count,
            memcmp(bytes.baseAddress! + index, literal.utf8Start, count) == 0
        else { throw failure("unexpected character") }
        index += count
    }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x0A, 0x0D, 0x09: index += 1
            default: return
            }
        }
    }

    private func failure(_ reason: String, code: JSONParseError.Code = .invalidSyntax) -> JSONParseError {
        JSONParseError(code: code, offset: index, reason: reason)
    }
}

/// The bytes the scanner looks for.
private enum Byte {
    static let quote = UInt8(ascii: "\"")
    static let backslash = UInt8(ascii: "\\")
    static let slash = UInt8(ascii: "/")
    static let openBracket = UInt8(ascii: "[")
    static let closeBracket = UInt8(ascii: "]")
    static let openBrace = UInt8(ascii: "{")
    static let closeBrace = UInt8(ascii: "}")
    static let colon = UInt8(ascii: ":")
    static let comma = UInt8(ascii: ",")
    static let minus = UInt8(ascii: "-")
    static let zero = UInt8(ascii: "0")
    static let nine = UInt8(ascii: "9")
    static let b = UInt8(ascii: "b")
    static let f = UInt8(ascii: "f")
    static let n = UInt8(ascii: "n")
    static let r = UInt8(ascii: "r")
    static let t = UInt8(ascii: "t")
    static let u = UInt8(ascii: "u")

    static func isFractionOrExponent(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: ".") || byte | 0x20 == UInt8(ascii: "e")
    }
}
