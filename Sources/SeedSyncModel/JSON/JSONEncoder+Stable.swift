package import Foundation

extension JSONEncoder {
    /// An encoder with sorted keys and unescaped slashes: the same value always gives the same bytes.
    package static func stable() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}
