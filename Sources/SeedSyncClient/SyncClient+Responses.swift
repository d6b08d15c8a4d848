import Foundation
import SeedSyncModel

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension SyncClient {
    /// The body as `T` for a 200, or the ``SyncClientError`` the status and error body call for.
    func decode<T: Decodable>(_ type: T.Type, from data: Data, response: HTTPURLResponse, label: String) throws -> T {
        guard response.statusCode == 200 else {
            var error = Self.error(status: response.statusCode, body: data, label: label)
            error.retryAfter = response.value(forHTTPHeaderField: "Retry-After").flatMap(Double.init)
            throw error
        }
        do {
            return try JSONDecoder().decode(type, from: data)
        } catch {
            throw SyncClientError(.malformedResponse, "\(label): the answer is not valid protocol v1 JSON (\(Self.summary(error)))")
        }
    }

    static func error(status: Int, body: Data, label: String) -> SyncClientError {
        let detail = (try? JSONDecoder().decode(ErrorResponse.self, from: body))?.error
        let message = "\(label): HTTP \(status)" + (detail.map { " \($0.code): \($0.message)" } ?? "")
        let code: SyncClientError.Code = switch (status, detail?.code) {
        case (401, _): .unauthorized
        case (403, _): .forbidden
        case (410, _): .historyExpired
        case (409, "revision_ahead"?): .revisionAhead
        default: .serverError
        }
        let hint = code == .unauthorized ? " (check the token: SEED_TOKEN or --token-file)" : ""
        return SyncClientError(code, message + hint, status: status, serverCode: detail?.code, minRevision: detail?.minRevision)
    }

    static func isRetryable(_ error: SyncClientError) -> Bool {
        switch error.code {
        case .unreachable: true
        case .serverError: error.status.map { $0 == 429 || $0 >= 500 } ?? false
        default: false
        }
    }

    private static func summary(_ error: any Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, _): "missing '\(key.stringValue)'"
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            "unexpected value at \(context.codingPath.map(\.stringValue).joined(separator: "."))"
        default: "not JSON"
        }
    }
}
