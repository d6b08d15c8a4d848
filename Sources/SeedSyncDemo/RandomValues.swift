import Foundation
import SeedSyncModel

/// Random values of each field type, for schemas other than the demo's.
enum RandomValues {
    static func value(for field: Field, using random: inout some RandomNumberGenerator) -> JSONValue {
        if field.nullable, random.chance(0.1) { return .null }
        switch field.type {
        case .integer: return .int(Int64.random(in: 0...1_000_000, using: &random))
        case .real: return .double((Double.random(in: -1_000...1_000, using: &random) * 1_000).rounded() / 1_000)
        case .text: return .string("\(random.pick(Words.genres)) \(Int.random(in: 1...9_999, using: &random))")
        case .boolean: return .bool(random.chance(0.5))
        case .timestamp:
            return .string(Timestamps.rfc3339(1_767_225_600 + Int64.random(in: 0..<63_072_000, using: &random)))
        case .blob:
            let bytes = (0..<Int.random(in: 1...32, using: &random)).map { _ in
                UInt8.random(in: 0...255, using: &random)
            }
            return .string(Data(bytes).base64EncodedString())
        case .json:
            return .object([
                "tag": .string(random.pick(Words.genres)), "score": .int(Int64.random(in: 0...100, using: &random)),
            ])
        }
    }
}
