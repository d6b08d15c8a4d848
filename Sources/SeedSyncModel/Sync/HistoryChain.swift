/// A server's history up to one revision, as one 32-byte value: the **history chain**.
///
/// The origin keeps a running SHA-256 over its change log (`docs/PROTOCOL.md` §11): the value at
/// revision `R` is `SHA-256(value at R−1 ‖ change set R)`, and the value where the log starts
/// is 32 random bytes drawn once per store. Two servers (or one server before and after a
/// restore) agree on the value at `R` only if they agree on every change set up to it, so a
/// client that keeps the value of its revision and sends it back learns, from the origin, whether
/// the history it applied is still the server's (`history_rewritten` when not).
///
/// On the wire a value is 64 lower-case hex digits.
///
/// ```swift
/// let chain = HistoryChain(hex: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08")
/// chain?.hex  // the same text
/// ```
public struct HistoryChain: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The 32 bytes.
    public let bytes: [UInt8]

    /// A value of exactly 32 bytes, else `nil`.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 32 else { return nil }
        self.bytes = bytes
    }

    /// A value from 64 lower-case hex digits (the wire form), else `nil`.
    public init?(hex: String) {
        let digits = Array(hex.utf8)
        guard digits.count == 64 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(32)
        for index in stride(from: 0, to: 64, by: 2) {
            guard let high = Self.nibble(digits[index]), let low = Self.nibble(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        self.bytes = bytes
    }

    /// The wire form: 64 lower-case hex digits.
    public var hex: String { bytes.lowercaseHex }

    public var description: String { hex }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let chain = HistoryChain(hex: text) else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "not 64 lower-case hex digits"))
        }
        self = chain
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(hex)
    }

    private static func nibble(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        default: nil
        }
    }
}
