/// A request a ``SyncClient`` could not complete, with what to do about it.
///
/// Messages name the URL path and the status, never the token or row data.
public struct SyncClientError: Error, CustomStringConvertible, Sendable {
    /// What went wrong. New codes may be added: a `switch` over it needs a `default`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case unauthorized, forbidden, historyExpired, revisionAhead, serverError, unreachable, malformedResponse
            case responseTooLarge, unknownSchemaVersion, notFound, historyRewritten, untrustedAnswer
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// 401: no token, or one the server does not know.
        public static let unauthorized = Code(.unauthorized)
        /// 403: the token may not do this, or the server refuses the request.
        public static let forbidden = Code(.forbidden)
        /// 410: the client's revision is older than the server's change history.
        public static let historyExpired = Code(.historyExpired)
        /// 409: the client's revision is newer than the server's.
        public static let revisionAhead = Code(.revisionAhead)
        /// 409 `history_rewritten`: the history the client applied is not the server's (the server
        /// was restored from an older backup or lost revisions): the local database must be replaced.
        public static let historyRewritten = Code(.historyRewritten)
        /// A log answer (`GET /v1/changes`) without a valid signature of a trusted key
        /// (``SyncClient/Configuration/answerKeys``): altered or replaced on its way from the origin.
        public static let untrustedAnswer = Code(.untrustedAnswer)
        /// Another 4xx, or a 5xx after the last retry.
        public static let serverError = Code(.serverError)
        /// The server could not be reached or did not answer in time, after the last retry.
        public static let unreachable = Code(.unreachable)
        /// The answer was not the JSON the protocol defines.
        public static let malformedResponse = Code(.malformedResponse)
        /// The answer was larger than the client's limit.
        public static let responseTooLarge = Code(.responseTooLarge)
        /// The server does not serve the schema version asked for (409 `unknown_schema_version`):
        /// it was not upgraded to it yet, or never had it.
        public static let unknownSchemaVersion = Code(.unknownSchemaVersion)
        /// 404 or 410 for a file (a published seed or its manifest): nothing is published at that address.
        public static let notFound = Code(.notFound)

        public var description: String { base.rawValue }
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
    package var retryAfter: Double?
    /// Whether a file download was answered with a `Content-Encoding` (``codedDownload()``): asked
    /// for again like a cut, since a proxy's glitch passes; a host that always codes fails after
    /// the retry policy's attempts, with this error.
    package private(set) var isCodedDownload = false

    /// This error, marked as a coded answer to a file download.
    package func codedDownload() -> SyncClientError {
        var marked = self
        marked.isCodedDownload = true
        return marked
    }

    package init(
        _ code: Code, _ description: String, status: Int? = nil, serverCode: String? = nil, minRevision: Int64? = nil
    ) {
        self.code = code
        self.description = description
        self.status = status
        self.serverCode = serverCode
        self.minRevision = minRevision
    }
}
