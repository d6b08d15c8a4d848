import Foundation
import Hummingbird
import SeedSyncModel

/// An error answer of protocol v1: a status and `{"error": {"code": "…", "message": "…"}}`.
///
/// Domain errors become these in this target alone (see ``init(_:)``); anything else is a bare 500.
public struct ServerError: HTTPResponseError, CustomStringConvertible, Sendable {
    public let status: HTTPResponse.Status
    public let code: String
    public let message: String
    var minRevision: Int64?
    var revision: Int64?
    var headers: HTTPFields = [:]

    init(_ status: HTTPResponse.Status, code: String, message: String) {
        self.status = status
        self.code = code
        self.message = message
    }

    /// The answer for a store error: 410, 409, 404, 400, 422, or 503 with `Retry-After` when the
    /// database is unavailable or no longer matches the schema (both end without the client).
    init(_ error: SyncStoreError) {
        let status = Self.statuses[error.code] ?? .internalServerError
        self.init(status, code: error.code.rawValue, message: error.description)
        minRevision = error.minRevision
        revision = error.revision
        if status == .serviceUnavailable { headers[.retryAfter] = "\(Self.retryAfterSeconds)" }
    }

    private static let statuses: [SyncStoreError.Code: HTTPResponse.Status] = [
        .historyExpired: .gone, .revisionAhead: .conflict, .unknownType: .notFound, .invalidKey: .badRequest,
        .invalidChangeSet: .unprocessableContent, .storeUnavailable: .serviceUnavailable,
        .schemaMismatch: .serviceUnavailable,
    ]

    /// Seconds a client is asked to wait after a 503: long enough for a database restart.
    static let retryAfterSeconds = 2

    /// The answer for an error Hummingbird raised (unknown route, body too large).
    init(_ error: HTTPError) {
        let code: String = switch error.status {
        case .notFound: "not_found"
        case .contentTooLarge: "body_too_large"
        case .badRequest: "bad_request"
        default: "http_\(error.status.code)"
        }
        self.init(error.status, code: code, message: error.body ?? error.status.reasonPhrase)
        headers = error.headers
    }

    public var description: String { "\(status.code) \(code): \(message)" }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var headers = self.headers
        headers[.contentType] = "application/json"
        return Response(status: status, headers: headers, body: .init(byteBuffer: try jsonBody()))
    }

    /// The body of the answer: `{"error": {"code": "…", "message": "…"}}`.
    func jsonBody() throws -> ByteBuffer {
        let body = ErrorResponse(error: .init(code: code, message: message, minRevision: minRevision, revision: revision))
        return ByteBuffer(bytes: try JSONEncoder.stable().encode(body))
    }

    static let unauthorized: ServerError = {
        var error = ServerError(.unauthorized, code: "unauthorized", message: "a valid bearer token is required")
        error.headers[.wwwAuthenticate] = "Bearer"
        return error
    }()

    static let forbidden = ServerError(.forbidden, code: "forbidden", message: "this token may not use admin endpoints")

    static let pushForbidden = ServerError(.forbidden, code: "forbidden", message: "this token may read but not push change sets; push with a write or admin token")

    /// 413 `body_too_large`, closing the connection: the rest of a large body is not worth reading.
    static func bodyTooLarge(_ limit: Int) -> ServerError {
        var error = ServerError(.contentTooLarge, code: "body_too_large", message: "the request body is larger than \(limit) bytes")
        error.headers[.connection] = "close"
        return error
    }

    /// 400 `malformed_http`, closing the connection: the request head or its body's framing is
    /// broken (an invalid chunk size, for one), so nothing after it can be read as a request.
    static let malformedHTTP: ServerError = {
        var error = ServerError(.badRequest, code: "malformed_http", message: "the request is not valid HTTP/1.1: a broken head or body framing")
        error.headers[.connection] = "close"
        return error
    }()

    /// 400 `incomplete_body`, closing the connection: the client closed or reset the connection
    /// before its whole request body arrived.
    static let incompleteBody: ServerError = {
        var error = ServerError(.badRequest, code: "incomplete_body", message: "the connection ended before the whole request body arrived")
        error.headers[.connection] = "close"
        return error
    }()

    static func bodyTimeout(_ timeout: Duration) -> ServerError {
        var error = ServerError(.requestTimeout, code: "body_timeout", message: "the request body did not arrive whole within \(timeout.components.seconds) seconds")
        error.headers[.connection] = "close"
        return error
    }

    /// 400 `malformed_json`: `reason` says where and why, such as `maxRevision: expected an integer`.
    static func malformedJSON(_ what: String, reason: String) -> ServerError {
        ServerError(.badRequest, code: "malformed_json", message: "the request body is not a valid \(what): \(reason)")
    }

    static func invalidParameter(_ name: String, _ expectation: String) -> ServerError {
        ServerError(.badRequest, code: "invalid_parameter", message: "\(name) must be \(expectation)")
    }
}
