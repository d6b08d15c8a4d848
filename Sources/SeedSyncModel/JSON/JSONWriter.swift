/// Writes compact JSON text into a byte array, fast and in a deterministic order.
///
/// The server builds snapshot pages and change sets with it instead of `JSONEncoder`, which is
/// several times slower on Linux and does not promise a key order.
///
/// ```swift
/// var writer = JSONWriter()
/// writer.beginObject()
/// writer.key("revision"); writer.value(.int(7))
/// writer.endObject()
/// // writer.bytes == Array(#"{"revision":7}"#.utf8)
/// ```
package struct JSONWriter: Sendable {
    /// The JSON text written so far, UTF-8.
    package private(set) var bytes: [UInt8] = []
    private var needsComma = false

    package init(capacity: Int = 1024) {
        bytes.reserveCapacity(capacity)
    }

    /// The compact JSON of `value` (object keys sorted): the canonical text of a `json` field.
    package static func bytes(of value: JSONValue) -> [UInt8] {
        var writer = JSONWriter(capacity: 64)
        writer.value(value)
        return writer.bytes
    }

    package mutating func beginObject() {
        separate()
        bytes.append(UInt8(ascii: "{"))
        needsComma = false
    }
    package mutating func endObject() {
        bytes.append(UInt8(ascii: "}"))
        needsComma = true
    }
    package mutating func beginArray() {
        separate()
        bytes.append(UInt8(ascii: "["))
        needsComma = false
    }
    package mutating func endArray() {
        bytes.append(UInt8(ascii: "]"))
        needsComma = true
    }

    /// Writes an object key; the next write is its value.
    package mutating func key(_ name: String) {
        separate()
        writeString(name)
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    /// Writes one value, nested arrays and objects included (object keys in sorted order).
    package mutating func value(_ value: JSONValue) {
        switch value {
        case .null: raw("null")
        case .bool(let flag): raw(flag ? "true" : "false")
        case .int(let number):
            separate()
            writeInteger(number)
            needsComma = true
        case .double(let number): raw(number.isFinite ? "\(number)" : "null")
        case .string(let text):
            separate()
            writeString(text)
            needsComma = true
        case .array(let items):
            beginArray()
            for item in items { self.value(item) }
            endArray()
        case .object(let members):
            beginObject()
            for name in members.keys.sorted() {
                key(name)
                self.value(members[name]!)
            }
            endObject()
        }
    }

    /// Writes a string value from its UTF-8 bytes, without making a `String` of them.
    package mutating func string(utf8 text: UnsafeBufferPointer<UInt8>) {
        separate()
        writeString(text)
        needsComma = true
    }

    /// Appends JSON text that is already encoded, as one value.
    package mutating func rawValue(_ json: [UInt8]) {
        separate()
        bytes.append(contentsOf: json)
        needsComma = true
    }

    private mutating func raw(_ text: String) {
        separate()
        bytes.append(contentsOf: text.utf8)
        needsComma = true
    }

    private mutating func separate() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
    }

    private mutating func writeString(_ text: String) {
        var text = text
        text.withUTF8 { writeString($0) }
    }

    private mutating func writeString(_ text: UnsafeBufferPointer<UInt8>) {
        bytes.append(UInt8(ascii: "\""))
        if !Self.needsEscapes(text) {
            bytes.append(contentsOf: text)
            bytes.append(UInt8(ascii: "\""))
            return
        }
        for byte in text {
            switch byte {
            case UInt8(ascii: "\""):
                bytes.append(UInt8(ascii: "\\"))
                bytes.append(byte)
            case UInt8(ascii: "\\"):
                bytes.append(UInt8(ascii: "\\"))
                bytes.append(byte)
            case 0x0A:
                bytes.append(UInt8(ascii: "\\"))
                bytes.append(UInt8(ascii: "n"))
            case 0x0D:
                bytes.append(UInt8(ascii: "\\"))
                bytes.append(UInt8(ascii: "r"))
            case 0x09:
                bytes.append(UInt8(ascii: "\\"))
                bytes.append(UInt8(ascii: "t"))
            case 0..<0x20:
                bytes.append(contentsOf: "\\u00".utf8)
                bytes.append(Self.hexDigits[Int(byte >> 4)])
                bytes.append(Self.hexDigits[Int(byte & 0x0F)])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// Whether a byte of `text` must be escaped: a control character, `"` or `\`. Most strings
    /// need none, and are copied whole after this scan, which reads eight bytes at a time.
    private static func needsEscapes(_ text: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let start = text.baseAddress else { return false }
        let raw = UnsafeRawPointer(start)
        var index = 0
        while index + 8 <= text.count {
            if holdsEscape(raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)) { return true }
            index += 8
        }
        while index < text.count {
            let byte = text[index]
            if byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { return true }
            index += 1
        }
        return false
    }

    /// Whether one of the eight bytes of `word` is below 0x20, `"` or `\` (the bit tricks of
    /// "Bit Twiddling Hacks": a byte below n, a byte equal to zero; exact as a yes or no).
    private static func holdsEscape(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        let control = (word &- ones &* 0x20) & ~word & highs
        let quote = word ^ (ones &* UInt64(UInt8(ascii: "\"")))
        let backslash = word ^ (ones &* UInt64(UInt8(ascii: "\\")))
        let equal = ((quote &- ones) & ~quote | (backslash &- ones) & ~backslash) & highs
        return control | equal != 0
    }

    /// Decimal digits straight into the buffer: `String(number)` would allocate for every one.
    private mutating func writeInteger(_ number: Int64) {
        if number < 0 { bytes.append(UInt8(ascii: "-")) }
        var magnitude = number.magnitude
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // room for 20 digits
        withUnsafeMutableBytes(of: &digits) { buffer in
            var index = buffer.count
            repeat {
                index -= 1
                buffer[index] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            bytes.append(contentsOf: buffer[index...])
        }
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)
}
