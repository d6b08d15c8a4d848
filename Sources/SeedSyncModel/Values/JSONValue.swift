import Foundation

/// A JSON value as it travels on the wire: attribute values, primary keys, snapshot cells.
///
/// Integers and reals are kept apart so an `integer` field never silently accepts `1.5`.
///
/// ```swift
/// let title: JSONValue = "Concert"
/// let id: JSONValue = 42
/// ```
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// The string form of a primary key, as used for the keys of an `attributes` map.
    ///
    /// Integers print in decimal, strings as themselves; other values have no key form.
    public var keyString: String? {
        switch self {
        case .int(let value): String(value)
        case .string(let value): value
        default: nil
        }
    }

    /// A short name of the value's JSON kind, for error messages.
    /// The number of an `.int`, else `nil`.
    public var intValue: Int64? {
        if case .int(let number) = self { number } else { nil }
    }

    public var kindName: String {
        switch self {
        case .null: "null"
        case .bool: "boolean"
        case .int: "integer"
        case .double: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }
}

extension JSONValue: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        // Most common first: every failed attempt builds a DecodingError, which is costly on Linux.
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .int(value)
        } else if let value = try? container.decode(Double.self) {
            self = .double(value)
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .int(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}

// No `ExpressibleByNilLiteral`: a `nil` meant as "no value" would silently become `.null`.
extension JSONValue: ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByStringLiteral
{
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(stringLiteral value: String) { self = .string(value) }
}
