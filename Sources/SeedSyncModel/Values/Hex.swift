extension Sequence<UInt8> {
    /// The bytes in lowercase hexadecimal, two digits each, as `sha256sum` writes a digest.
    ///
    /// ```swift
    /// [0x0f, 0xa0].lowercaseHex  // "0fa0"
    /// ```
    package var lowercaseHex: String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(underestimatedCount * 2)
        for byte in self {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0xF)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
