/// The members of a parsed JSON object, read with errors that name where the problem is.
///
/// Protocol messages are read from a ``JSONValue`` tree (see ``JSONParser``) through it, so a
/// wrong answer reads as `changeSets[2].types: expected an array of strings`.
///
/// ```swift
/// let members = try JSONMembers(value, at: "page")
/// let revision = try members.int64("revision")
/// ```
package struct JSONMembers: Sendable {
    package let members: [String: JSONValue]
    /// Where the object is, for error messages: `changeSets[2]`.
    package let path: String

    package init(_ value: JSONValue, at path: String) throws(JSONShapeError) {
        guard case .object(let members) = value else {
            throw JSONShapeError(.wrongType, path, "expected an object, got \(value.kindName)")
        }
        self.members = members
        self.path = path
    }

    /// The path of member `name`.
    package func path(of name: String) -> String { path.isEmpty ? name : "\(path).\(name)" }

    package func value(_ name: String) throws(JSONShapeError) -> JSONValue {
        guard let value = members[name] else { throw JSONShapeError(.missing, path(of: name), "missing") }
        return value
    }

    package func int64(_ name: String) throws(JSONShapeError) -> Int64 {
        let value = try value(name)
        if case .double(let number) = value, number.rounded() == number, abs(number) >= 0x1p63 {
            throw JSONShapeError(
                .invalidValue, path(of: name),
                "out of range: integers here fit in 64 bits (-9223372036854775808 to 9223372036854775807)")
        }
        guard case .int(let number) = value else {
            throw JSONShapeError(.wrongType, path(of: name), "expected an integer")
        }
        return number
    }

    /// The integer `name`, or `nil` when it is absent or `null`.
    package func int64IfPresent(_ name: String) throws(JSONShapeError) -> Int64? {
        guard let value = members[name], value != .null else { return nil }
        return try int64(name)
    }

    /// The ``HistoryChain`` `name` (64 or 8 lower-case hex digits), or `nil` when it is absent.
    package func chainIfPresent(_ name: String) throws(JSONShapeError) -> HistoryChain? {
        guard let value = members[name] else { return nil }
        return try Self.chain(value, at: path(of: name))
    }

    /// `value` as a ``HistoryChain``.
    package static func chain(_ value: JSONValue, at path: String) throws(JSONShapeError) -> HistoryChain {
        guard case .string(let text) = value, let chain = HistoryChain(hex: text) else {
            throw JSONShapeError(.invalidValue, path, "expected a history chain: 64 (or 8) lower-case hex digits")
        }
        return chain
    }

    package func bool(_ name: String) throws(JSONShapeError) -> Bool {
        guard case .bool(let flag) = try value(name) else {
            throw JSONShapeError(.wrongType, path(of: name), "expected true or false")
        }
        return flag
    }

    package func string(_ name: String) throws(JSONShapeError) -> String {
        guard case .string(let text) = try value(name) else {
            throw JSONShapeError(.wrongType, path(of: name), "expected a string")
        }
        return text
    }

    package func array(_ name: String) throws(JSONShapeError) -> [JSONValue] {
        guard case .array(let items) = try value(name) else {
            throw JSONShapeError(.wrongType, path(of: name), "expected an array")
        }
        return items
    }

    /// The array `name`, or an empty one when it is absent or `null`.
    package func arrayIfPresent(_ name: String) throws(JSONShapeError) -> [JSONValue] {
        guard let value = members[name], value != .null else { return [] }
        return try array(name)
    }

    package func strings(_ name: String) throws(JSONShapeError) -> [String] {
        try array(name).map { (item) throws(JSONShapeError) -> String in
            guard case .string(let text) = item else {
                throw JSONShapeError(.wrongType, path(of: name), "expected an array of strings")
            }
            return text
        }
    }
}

/// A parsed JSON document that is not the message it should be.
public struct JSONShapeError: Error, CustomStringConvertible, Sendable, Hashable {
    /// What is wrong. New codes may be added: a `switch` over it needs a `default`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case missing, wrongType, invalidValue
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// A member the message needs is not there.
        public static let missing = Code(.missing)
        /// A member or element is of another JSON type than the message needs.
        public static let wrongType = Code(.wrongType)
        /// A member has the right type but a value the protocol does not allow.
        public static let invalidValue = Code(.invalidValue)

        public var description: String { base.rawValue }
    }

    public let code: Code
    /// Where: `changeSets[2].types`.
    public let path: String
    public let reason: String

    public init(_ code: Code, _ path: String, _ reason: String) {
        self.code = code
        self.path = path
        self.reason = reason
    }

    public var description: String { "\(path): \(reason)" }
}
