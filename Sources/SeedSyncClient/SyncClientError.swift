/// A request a ``SyncClient`` could not complete, with what to do about it.
///
/// Messages name the URL path and the status, never the token or row data.
public struct SyncClientError: Error, CustomStringConvertible, Sendable {
    /// What went wrong.
    public enum Code: Sendable, Hashable {
        /// 401: no token, or one the server does not know.
        case unauthorized
        /// 403: the token may not do this, or the server refuses the request.
        case forbidden
        /// 410: the client's revision is older than the server's change history.
        case historyExpired
        /// 409: the client's revision is newer than the server's.
        case revisionAhead
        /// Another 4xx, or a 5xx after the last retry.
        case serverError
        /// The server could not be reached or did not answer in time, after the last retry.
        case unreachable
        /// The answer was not the JSON the protocol defines.
        case malformedResponse
        /// The answer was larger than the client's limit.
        case responseTooLarge
    }

    public let code: Code
    /// The HTTP status, when the server answered.
    public let status: Int?
    /// The server's error code (`history_expired`, …), when it sent one.
    public let serverCode: String?
    /// For ``Code/historyExpired``: the oldest revision the server can sync from.
    public let minRevision: Int64?
    public let description: String
    /// The server's `Retry-After`, in seconds, when it sent one.
    var retryAfter: Double?

    init(_ code: Code, _ description: String, status: Int? = nil, serverCode: String? = nil, minRevision: Int64? = nil) {
        self.code = code
        self.description = description
        self.status = status
        self.serverCode = serverCode
        self.minRevision = minRevision
    }
}
