/// A protocol message read from parsed JSON by one strict reading, ``init(json:)``: its `Decodable`
/// conformance goes through it, so a `JSONDecoder` refuses what the server and the client refuse.
///
/// ```swift
/// let request = try JSONDecoder().decode(SyncRequest.self, from: body)  // the same as SyncRequest(json:)
/// ```
public protocol JSONReadable: Decodable {
    /// Reads the message from parsed JSON (see ``JSONParser``).
    ///
    /// - Throws: ``JSONShapeError`` when a member is missing or of the wrong kind.
    init(json: JSONValue) throws(JSONShapeError)
}

extension JSONReadable {
    public init(from decoder: any Decoder) throws {
        try self.init(json: JSONValue(from: decoder))
    }
}

/// A protocol message with one encoding, ``jsonBytes()``: its `Encodable` conformance goes
/// through it, so a `JSONEncoder` writes the members the documents specify.
public protocol JSONWritable: Encodable {
    /// The message as compact JSON, members in the documented order.
    func jsonBytes() -> [UInt8]
}

extension JSONWritable {
    /// Encodes ``jsonBytes()`` as a JSON value.
    public func encode(to encoder: any Encoder) throws {
        try JSONParser.parse(jsonBytes()).encode(to: encoder)
    }
}

/// A message read and written by one reading and one encoding.
public typealias JSONMessage = JSONReadable & JSONWritable
