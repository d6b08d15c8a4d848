import Foundation
package import Hummingbird
package import SeedSyncModel

/// An error answer of protocol v1: a status and `{"error": {"code": "…", "message": "…"}}`.
///
/// Domain errors become these in this target alone (see ``init(_:)``); anything else is a bare 500.
package struct ServerError: HTTPResponseError, CustomStringConvertible, Sendable {
    /// The machine-readable code of the error body, such as `malformed_json`. New codes may be
    /// added: compare with the static members, and keep a default branch.
    package struct Code: Sendable, Hashable, CustomStringConvertible {
        /// The code as the error body spells it.
        package let rawValue: String

        fileprivate init(_ rawValue: String) { self.rawValue = rawValue }

        /// The code of a store's error: `history_expired`, `unknown_type`, …
        package init(_ code: SyncStoreError.Code) { rawValue = code.rawValue }

        /// 401: no bearer token, or one the server does not know.
        package static let unauthorized = Code("unauthorized")
        /// 403: the token's scope does not allow the request.
        package static let forbidden = Code("forbidden")
        /// 404: no such route.
        package static let notFound = Code("not_found")
        /// 400: a query parameter out of its range.
        package static let invalidParameter = Code("invalid_parameter")
        /// 400: the body is not the JSON message the route takes.
        package static let malformedJSON = Code("malformed_json")
        /// 400: a gzip body that is not one whole gzip stream.
        package static let malformedGzip = Code("malformed_gzip")
        /// 400: the request's HTTP framing is broken.
        package static let malformedHTTP = Code("malformed_http")
        /// 431: the request head (request line and headers) is larger than the server reads.
        package static let headersTooLarge = Code("headers_too_large")
        /// 400: the connection ended before the whole body arrived.
        package static let incompleteBody = Code("incomplete_body")
        /// 400: another malformed request.
        package static let badRequest = Code("bad_request")
        /// 408: the body did not arrive in time.
        package static let bodyTimeout = Code("body_timeout")
        /// 413: the body is larger than the server's limit.
        package static let bodyTooLarge = Code("body_too_large")
        /// 413: a sync request pushes more change sets than the server takes at once.
        package static let tooManyChangeSets = Code("too_many_change_sets")
        /// 415: a `Content-Encoding` other than `gzip` or `identity`.
        package static let unsupportedEncoding = Code("unsupported_encoding")
        /// 503: the server holds as many live sync requests as it may; retry after `Retry-After`.
        package static let tooManyWaiting = Code("too_many_waiting")
        /// 422: a change set that does not fit the schema.
        package static let invalidChangeSet = Code(SyncStoreError.Code.invalidChangeSet)

        package var description: String { rawValue }
    }

    package let status: HTTPResponse.Status
    package let code: Code
    package let message: String
    var minRevision: Int64?
    var revision: Int64?
    var headers: HTTPFields = [:]

    init(_ status: HTTPResponse.Status, code: Code, message: String) {
        self.status = status
        self.code = code
        self.message = message
    }

    /// The answer for a store error: 410, 409, 404, 400, 422, or 503 with `Retry-After` when the
    /// database is unavailable or no longer matches the schema (both end without the client).
    init(_ error: SyncStoreError) {
        let status = Self.statuses[error.code] ?? .internalServerError
        self.init(status, code: Code(error.code), message: error.description)
        minRevision = error.minRevision
        revision = error.revision
        if status == .serviceUnavailable { headers[.retryAfter] = "\(Self.retryAfterSeconds)" }
    }

    private static let statuses: [SyncStoreError.Code: HTTPResponse.Status] = [
        .historyExpired: .gone, .revisionAhead: .conflict, .historyRewritten: .conflict, .unknownType: .notFound,
        .invalidKey: .badRequest,
        .invalidChangeSet: .unprocessableContent, .storeUnavailable: .serviceUnavailable,
        .schemaMismatch: .serviceUnavailable, .unknownSchemaVersion: .conflict,
        .unknownField: .badRequest, .invalidRegistration: .unprocessableContent,
    ]

    /// Seconds a client is asked to wait after a 503: long enough for a database restart.
    static let retryAfterSeconds = 2

    /// The answer for an error Hummingbird raised (unknown route, body too large).
    init(_ error: HTTPError) {
        let code: Code =
            switch error.status {
            case .notFound: .notFound
            case .contentTooLarge: .bodyTooLarge
            case .badRequest: .badRequest
            default: Code("http_\(error.status.code)")
            }
        self.init(error.status, code: code, message: error.body ?? error.status.reasonPhrase)
        headers = error.headers
    }

    package var description: String { "\(status.code) \(code): \(message)" }

    package func response(from request: Request, context: some RequestContext) throws -> Response {
        var headers = self.headers
        headers[.contentType] = "application/json"
        return Response(status: status, headers: headers, body: .init(byteBuffer: try jsonBody()))
    }

    /// The body of the answer: `{"error": {"code": "…", "message": "…"}}`.
    func jsonBody() throws -> ByteBuffer {
        let body = ErrorResponse(
            error: .init(code: code.rawValue, message: message, minRevision: minRevision, revision: revision))
        return ByteBuffer(bytes: try JSONEncoder.stable().encode(body))
    }

    static let unauthorized: ServerError = {
        var error = ServerError(.unauthorized, code: .unauthorized, message: "a valid bearer token is required")
        error.headers[.wwwAuthenticate] = "Bearer"
        return error
    }()

    /// 401 for a token the server refused, saying why in the body and in `WWW-Authenticate`
    /// (RFC 6750 `invalid_token`).
    static func unauthorized(_ refusal: TokenRefusal) -> ServerError {
        var error = ServerError(.unauthorized, code: .unauthorized, message: refusal.message)
        let description = refusal.message.replacingOccurrences(of: "\"", with: "'")
        error.headers[.wwwAuthenticate] = "Bearer error=\"invalid_token\", error_description=\"\(description)\""
        return error
    }

    static let forbidden = ServerError(.forbidden, code: .forbidden, message: "this token may not use admin endpoints")

    static let pushForbidden = ServerError(
        .forbidden, code: .forbidden,
        message: "this token may read but not push change sets; push with a write or admin token")

    /// 413 `body_too_large`, closing the connection: the rest of a large body is not worth reading.
    static func bodyTooLarge(_ limit: Int) -> ServerError {
        var error = ServerError(
            .contentTooLarge, code: .bodyTooLarge, message: "the request body is larger than \(limit) bytes")
        error.headers[.connection] = "close"
        return error
    }

    /// 400 `malformed_http`, closing the connection: the request head or its body's framing is
    /// broken (an invalid chunk size, for one), so nothing after it can be read as a request.
    static let malformedHTTP: ServerError = {
        var error = ServerError(
            .badRequest, code: .malformedHTTP,
            message: "the request is not valid HTTP/1.1: a broken head or body framing")
        error.headers[.connection] = "close"
        return error
    }()

    /// 431 `headers_too_large`, closing the connection: the request head passed the 80 KiB
    /// NIO's HTTP decoder reads (a huge `If-None-Match` or cookie), so the rest cannot be read.
    static let headersTooLarge: ServerError = {
        var error = ServerError(
            .init(code: 431, reasonPhrase: "Request Header Fields Too Large"), code: .headersTooLarge,
            message: "the request line and headers take more than 80 KiB; send shorter headers")
        error.headers[.connection] = "close"
        return error
    }()

    /// 400 `incomplete_body`, closing the connection: the client closed or reset the connection
    /// before its whole request body arrived.
    static let incompleteBody: ServerError = {
        var error = ServerError(
            .badRequest, code: .incompleteBody, message: "the connection ended before the whole request body arrived")
        error.headers[.connection] = "close"
        return error
    }()

    static func bodyTimeout(_ timeout: Duration) -> ServerError {
        var error = ServerError(
            .requestTimeout, code: .bodyTimeout,
            message: "the request body did not arrive whole within \(timeout.components.seconds) seconds")
        error.headers[.connection] = "close"
        return error
    }

    /// 400 `malformed_json`: `reason` says where and why, such as `maxRevision: expected an integer`.
    static func malformedJSON(_ what: String, reason: String) -> ServerError {
        ServerError(.badRequest, code: .malformedJSON, message: "the request body is not a valid \(what): \(reason)")
    }

    /// 503 `too_many_waiting`: `capacity` sync requests are held already.
    static func tooManyWaiting(_ capacity: Int) -> ServerError {
        var error = ServerError(
            .serviceUnavailable, code: .tooManyWaiting,
            message:
                "the server already holds \(capacity) waiting sync requests; send the request again after Retry-After seconds, or without wait"
        )
        error.headers[.retryAfter] = "\(retryAfterSeconds)"
        return error
    }

    /// 403: an address names scope value `value`, which the token does not grant. Said from the
    /// token alone, whether or not the value has rows.
    static func scopeNotGranted(scope: String, value: JSONValue, grant: ScopeGrant) -> ServerError {
        ServerError(
            .forbidden, code: .forbidden,
            message:
                "this token does not grant \(scope) \(value.keyString?.clippedForMessage ?? "?"); it grants \(granted(grant, of: scope)): name only those in scopes=, or ask for a token that grants it"
        )
    }

    private static func granted(_ grant: ScopeGrant, of scope: String) -> String {
        guard let values = grant.values else { return "every \(scope) value" }
        return values.isEmpty ? "no \(scope) value" : "\(scope) \(grant)"
    }

    static func invalidParameter(_ name: String, _ expectation: String) -> ServerError {
        ServerError(.badRequest, code: .invalidParameter, message: "\(name) must be \(expectation)")
    }
}
