import Hummingbird
import NIOCore
import NIOHTTP1
import SeedSyncGzip
import SeedSyncModel

extension Request {
    /// The request body, decompressed when it comes with `Content-Encoding: gzip`.
    ///
    /// - Throws: 413 when the body, or its decompressed form, exceeds `limit` bytes (by even one);
    ///   408 when it has not arrived whole within `timeout`; 400 when it cannot be read (see
    ///   ``collectBody(upTo:within:)``) or is not one whole, valid gzip stream; 415 for another
    ///   content coding.
    func collectBody(decompressingUpTo limit: Int, within timeout: Duration) async throws -> ByteBuffer {
        let body = try await collectBody(upTo: limit, within: timeout)
        switch headers[.contentEncoding]?.lowercased() {
        case nil, "identity":
            return body
        case "gzip":
            return try Self.gunzip(body, upTo: limit)
        case let other?:
            throw ServerError(
                .unsupportedMediaType, code: .unsupportedEncoding,
                message: "Content-Encoding '\(other.clippedForMessage)' is not supported; use gzip")
        }
    }

    /// The request body as received, read whole within `timeout`.
    ///
    /// A body the connection cannot deliver is the client's doing, not a server failure: broken
    /// chunked framing is 400 `malformed_http`, a connection closed or reset mid-body is 400
    /// `incomplete_body` (which the client will not read); both close the connection.
    /// A `Content-Length` over `limit` is answered at once: the body is not waited for.
    private func collectBody(upTo limit: Int, within timeout: Duration) async throws -> ByteBuffer {
        if let declared = headers[.contentLength].flatMap(Int.init), declared > limit {
            throw ServerError.bodyTooLarge(limit)
        }
        do {
            return try await Self.collect(body, upTo: limit, within: timeout)
        } catch is NIOTooManyBytesError {
            throw ServerError.bodyTooLarge(limit)
        } catch let error as HTTPParserError {
            throw error == .invalidEOFState ? ServerError.incompleteBody : ServerError.malformedHTTP
        } catch is IOError, is ChannelError {
            throw ServerError.incompleteBody
        }
    }

    /// Decompresses one whole gzip stream of at most `limit` bytes; stops at the first byte over it.
    ///
    /// - Throws: 413 `body_too_large` over the limit; 400 `malformed_gzip` for corrupt data, a
    ///   stream that does not end, or bytes after its end; ``GzipInflater/Failure/unavailable``
    ///   when zlib cannot start (a 500).
    static func gunzip(_ compressed: ByteBuffer, upTo limit: Int) throws -> ByteBuffer {
        var output = ByteBuffer()
        do {
            let inflater = try GzipInflater()
            try compressed.withUnsafeReadableBytes { input in
                try inflater.feed(input) { chunk in
                    guard chunk.count <= limit - output.readableBytes else { throw ServerError.bodyTooLarge(limit) }
                    output.writeBytes(chunk)
                }
            }
            try inflater.finish()
        } catch let error as ServerError {
            throw error
        } catch GzipInflater.Failure.unavailable {
            throw GzipInflater.Failure.unavailable
        } catch {
            let reason =
                switch error as? GzipInflater.Failure {
                case .truncated: "the gzip stream ends early"
                case .trailingBytes: "bytes follow the end of the gzip stream"
                default: "the bytes are not valid gzip"
                }
            throw ServerError(
                .badRequest, code: .malformedGzip, message: "the request body is not one whole gzip stream: \(reason)")
        }
        return output
    }

    /// Reads `body` whole, racing a timer. When the timer wins, the read is cancelled and the
    /// answer is 408 with `Connection: close`, which ends the connection (see ``ConnectionCloseHandler``).
    private static func collect(_ body: RequestBody, upTo limit: Int, within timeout: Duration) async throws
        -> ByteBuffer
    {
        try await withThrowingTaskGroup(of: ByteBuffer?.self) { group in
            group.addTask { try await body.collect(upTo: limit) }
            group.addTask {
                try await Task.sleep(for: timeout)
                return nil
            }
            defer { group.cancelAll() }
            guard let collected = try await group.next(), let buffer = collected else {
                throw ServerError.bodyTimeout(timeout)
            }
            return buffer
        }
    }
}
