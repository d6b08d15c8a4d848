/// A change set a client pushes in `POST /v1/sync` (write-back): its changes in the shape the
/// server sends them, with an id the client chose.
///
/// ```json
/// {"id": "3f6c2a", "types": ["locations", "events"],
///  "locations": {"create": [-1], "attributes": {"-1": {"name": "Hall"}}},
///  "events": {"create": [-2], "update": [5], "delete": [9],
///             "attributes": {"-2": {"title": "Gig", "location_id": -1, …},
///                            "5": {"title": "New title", …, "revision": 17},
///                            "9": {"revision": 12}}}}
/// ```
///
/// - The `id` (1 to 64 characters of `A-Z a-z 0-9 _ -`) is the idempotency key: the server
///   applies a change set once, and answers a retry with the first result.
/// - New rows of integer-keyed types carry negative temporary keys, which other fields of the same
///   change set may reference; the server assigns the real keys. Text-keyed types use the
///   client's keys.
/// - Every updated and deleted row carries the revision the client last saw (`revision` in its
///   attributes; a deleted row's attributes are that alone).
public struct PushedChangeSet: Sendable, Hashable {
    public var id: String
    public var changeSet: ChangeSet

    public init(id: String, changeSet: ChangeSet) {
        self.id = id
        self.changeSet = changeSet
    }

    /// Reads a pushed change set from parsed JSON.
    ///
    /// - Throws: ``JSONShapeError`` when the id is missing or malformed, a revision is given, or
    ///   the changes are not shaped as a change set.
    public init(json: JSONValue) throws(JSONShapeError) {
        try self.init(json: json, at: "")
    }

    /// ``init(json:)`` at `path` of a larger document, which errors name (`changeSets[3]`).
    public init(json: JSONValue, at path: String) throws(JSONShapeError) {
        let members = try JSONMembers(json, at: path)
        id = try members.string("id")
        guard Self.isValidID(id) else {
            throw JSONShapeError(
                .invalidValue, members.path(of: "id"), "expected 1 to 64 characters of A-Z, a-z, 0-9, _ and -")
        }
        changeSet = try ChangeSet(json: json, at: path)
        guard changeSet.revision == nil else {
            throw JSONShapeError(
                .invalidValue, members.path(of: "revision"), "must not be given: the server assigns revisions")
        }
    }

    /// Whether `id` can name a pushed change set.
    public static func isValidID(_ id: String) -> Bool {
        (1...64).contains(id.utf8.count)
            && id.utf8.allSatisfy { byte in
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                    || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_")
                    || byte == UInt8(ascii: "-")
            }
    }

    /// The JSON a client sends: `id`, then the change set's members.
    public func jsonBytes() -> [UInt8] {
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("id")
        writer.value(.string(id))
        changeSet.writeMembers(to: &writer)
        writer.endObject()
        return writer.bytes
    }
}

/// What became of one pushed change set: one entry of `results` in the answer of `POST /v1/sync`.
public struct PushResult: Sendable, Hashable {
    public enum Status: Sendable, Hashable {
        /// Committed as `revision`; `keys` maps each temporary key to the real one, by type
        /// (`{"events": {"-2": 311}}`).
        case applied(revision: Int64, keys: [String: [String: JSONValue]])
        /// Not applied: a row it updated or deleted changed or went since the client saw it, or a
        /// key it created exists. The change set holds the server's current state of every row it
        /// touched (``ChangeSet/conflict`` is set).
        case conflict(ChangeSet)
        /// Not applied: it does not fit the schema (`code` is `invalid_change_set`).
        case rejected(code: String, message: String)
    }

    public var id: String
    public var status: Status

    public init(id: String, status: Status) {
        self.id = id
        self.status = status
    }

    /// `{"id": …, "status": "applied", "revision": r, "keys": {…}}`,
    /// `{"id": …, "status": "conflict", "changeSet": {"conflict": true, …}}` or
    /// `{"id": …, "status": "rejected", "error": {"code": …, "message": …}}`.
    public func jsonBytes() -> [UInt8] {
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("id")
        writer.value(.string(id))
        writer.key("status")
        switch status {
        case .applied(let revision, let keys):
            writer.value("applied")
            writer.key("revision")
            writer.value(.int(revision))
            writer.key("keys")
            writer.value(.object(keys.mapValues(JSONValue.object)))
        case .conflict(let changeSet):
            writer.value("conflict")
            writer.key("changeSet")
            writer.rawValue(changeSet.jsonBytes())
        case .rejected(let code, let message):
            writer.value("rejected")
            writer.key("error")
            writer.value(.object(["code": .string(code), "message": .string(message)]))
        }
        writer.endObject()
        return writer.bytes
    }

    /// Reads a result from parsed JSON.
    ///
    /// - Throws: ``JSONShapeError`` when a member is missing or of the wrong kind.
    public init(json: JSONValue) throws(JSONShapeError) {
        try self.init(json: json, at: "")
    }

    /// ``init(json:)`` at `path` of a larger document, which errors name (`results[0]`).
    public init(json: JSONValue, at path: String) throws(JSONShapeError) {
        let members = try JSONMembers(json, at: path)
        id = try members.string("id")
        switch try members.string("status") {
        case "applied":
            let keys = try JSONMembers(members.value("keys"), at: members.path(of: "keys"))
            var byType: [String: [String: JSONValue]] = [:]
            for (type, map) in keys.members { byType[type] = try JSONMembers(map, at: keys.path(of: type)).members }
            status = .applied(revision: try members.int64("revision"), keys: byType)
        case "conflict":
            status = .conflict(try ChangeSet(json: members.value("changeSet"), at: members.path(of: "changeSet")))
        case "rejected":
            let error = try JSONMembers(members.value("error"), at: members.path(of: "error"))
            status = .rejected(code: try error.string("code"), message: try error.string("message"))
        default:
            throw JSONShapeError(.invalidValue, members.path(of: "status"), "expected applied, conflict or rejected")
        }
    }
}

extension PushedChangeSet: JSONMessage {}

extension PushResult: JSONMessage {}
