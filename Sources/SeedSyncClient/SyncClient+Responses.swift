import Foundation
import SeedSyncModel

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension SyncClient {
    /// Throws the ``SyncClientError`` a status other than 200 and its error body call for.
    func checkStatus(of response: HTTPURLResponse, body: Data, label: String) throws {
        guard response.statusCode != 200 else { return }
        var error = Self.error(status: response.statusCode, body: body, label: label)
        error.retryAfter = response.value(forHTTPHeaderField: "Retry-After").flatMap(Double.init)
        throw error
    }

    /// A small answer, decoded with `JSONDecoder`.
    static func decode<T: Decodable>(_ type: T.Type, from data: Data, label: String) throws -> T {
        do {
            return try JSONDecoder().decode(type, from: data)
        } catch {
            throw SyncClientError(
                .malformedResponse, "\(label): the answer is not valid protocol v1 JSON (\(summary(error)))")
        }
    }

    /// A large answer (snapshot pages, change feeds), parsed with ``JSONParser``.
    static func parse<T>(_ data: Data, label: String, as read: (JSONValue) throws(JSONShapeError) -> T) throws -> T {
        try parse(data, label: label) { try read(JSONParser.parse($0)) }
    }

    /// Reads an answer with `read`, which throws ``JSONParseError`` for text that is not JSON and
    /// any other error for JSON that is not the answer expected.
    static func parse<T>(_ data: Data, label: String, reading read: (Data) throws -> T) throws -> T {
        do {
            return try read(data)
        } catch let error as JSONParseError {
            throw SyncClientError(.malformedResponse, "\(label): the answer is not JSON (\(error))")
        } catch {
            throw SyncClientError(.malformedResponse, "\(label): the answer is not valid protocol v1 JSON (\(error))")
        }
    }

    static func error(status: Int, body: Data, label: String) -> SyncClientError {
        let detail = (try? JSONDecoder().decode(ErrorResponse.self, from: body))?.error
        let message = "\(label): HTTP \(status)" + (detail.map { " \($0.code): \($0.message)" } ?? "")
        let code: SyncClientError.Code =
            switch (status, detail?.code) {
            case (401, _): .unauthorized
            case (403, _): .forbidden
            case (410, _): .historyExpired
            case (409, "revision_ahead"?): .revisionAhead
            case (409, "history_rewritten"?): .historyRewritten
            case (409, "unknown_schema_version"?): .unknownSchemaVersion
            default: .serverError
            }
        return SyncClientError(
            code, message, status: status, serverCode: detail?.code, minRevision: detail?.minRevision)
    }

    static func isRetryable(_ error: SyncClientError) -> Bool {
        if error.code == .unreachable { return true }
        return error.code == .serverError && error.status.map { $0 == 429 || $0 >= 500 } ?? false
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
