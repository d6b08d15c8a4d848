/// A server's history up to one revision, as one 32-byte value: the **history chain**.
///
/// The origin keeps a running SHA-256 over its change log (`docs/PROTOCOL.md` §11): the value at
/// revision `R` is `SHA-256(value at R−1 ‖ change set R)`, and the value where the log starts
/// is 32 random bytes drawn once per store. Two servers (or one server before and after a
/// restore) agree on the value at `R` only if they agree on every change set up to it, so a
/// client that keeps the value of its revision and sends it back learns, from the origin, whether
/// the history it applied is still the server's (`history_rewritten` when not).
///
/// On the wire a value is 64 lower-case hex digits, or, for each change set of an answer, its first
/// 4 bytes (8 digits, ``prefix``): enough to tell a rewritten history from the one a client applied
/// (two histories agree on it by chance once in 2^32), at an eighth of the bytes.
/// Two values **agree** when the shorter is a prefix of the longer (``agrees(with:)``).
///
/// ```swift
/// let chain = HistoryChain(hex: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08")
/// chain?.hex  // the same text
/// ```
public struct HistoryChain: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The 32 bytes.
    public let bytes: [UInt8]

    /// A value of 32 bytes, or a prefix of 4, else `nil`.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 32 || bytes.count == Self.prefixLength else { return nil }
        self.bytes = bytes
    }

    /// A value from 64 lower-case hex digits, or a prefix from 8 (the wire forms), else `nil`.
    public init?(hex: String) {
        let digits = Array(hex.utf8)
        guard digits.count == 64 || digits.count == 2 * Self.prefixLength else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let high = Self.nibble(digits[index]), let low = Self.nibble(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        self.bytes = bytes
    }

    /// The wire form: 64 lower-case hex digits (8 for a prefix).
    public var hex: String { bytes.lowercaseHex }

    /// The bytes of a prefix: 4.
    public static let prefixLength = 4

    /// The first 4 bytes: what an answer sends for each change set.
    public var prefix: HistoryChain { HistoryChain(bytes: Array(bytes.prefix(Self.prefixLength)))! }

    /// Whether the two name the same history: the shorter is a prefix of the longer.
    public func agrees(with other: HistoryChain) -> Bool {
        let length = min(bytes.count, other.bytes.count)
        return bytes.prefix(length) == other.bytes.prefix(length)
    }

    public var description: String { hex }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let chain = HistoryChain(hex: text) else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "not 64 (or 8) lower-case hex digits"))
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
