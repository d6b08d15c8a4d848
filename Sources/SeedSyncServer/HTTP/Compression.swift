import CompressNIO
import Hummingbird
import NIOCore

/// Compresses response bodies with gzip when the request sends `Accept-Encoding: gzip` and the
/// body is at least `minimumSize` bytes. Answers vary by `Accept-Encoding`.
///
/// Bodies are compressed at zlib level 1, as nginx does by default: on-the-fly compression must
/// cost less than the bandwidth it saves. Level 6 made zlib half of the server's time in a
/// million-row download and only shrank pages by another fifth.
struct ResponseCompressionMiddleware<Context: RequestContext>: RouterMiddleware {
    let minimumSize: Int

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response = try await next(request, context)
        response.headers[.vary] = "Accept-Encoding"
        guard Self.acceptsGzip(request.headers[.acceptEncoding]),
            response.headers[.contentEncoding] == nil,
            (response.body.contentLength ?? .max) >= minimumSize
        else { return response }
        var plain = try await Self.collect(response.body)
        response.body = ResponseBody(byteBuffer: try plain.compress(with: Self.gzip))
        response.headers[.contentEncoding] = "gzip"
        return response
    }

    private static var gzip: CompressionAlgorithm { .gzip(configuration: .init(compressionLevel: .fastestCompression)) }

    /// Whether an `Accept-Encoding` value allows gzip: `gzip` or `*` with a non-zero quality.
    static func acceptsGzip(_ header: String?) -> Bool {
        guard let header else { return false }
        return header.split(separator: ",").contains { item in
            let parts = item.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            guard parts.first == "gzip" || parts.first == "*" else { return false }
            let quality = parts.dropFirst().first { $0.hasPrefix("q=") }.flatMap { Double($0.dropFirst(2)) } ?? 1
            return quality > 0
        }
    }

    private static func collect(_ body: ResponseBody) async throws -> ByteBuffer {
        let collector = Collector()
        try await body.write(collector)
        return collector.buffer
    }

    /// Gathers a response body written as chunks; responses here are bounded by page and feed limits.
    private final class Collector: ResponseBodyWriter {
        var buffer = ByteBuffer()
        func write(_ buffer: ByteBuffer) async throws { self.buffer.writeImmutableBuffer(buffer) }
        func finish(_ trailingHeaders: HTTPFields?) async throws {}
    }
}

extension Request {
    /// The request body, decompressed when it comes with `Content-Encoding: gzip`.
    ///
    /// - Throws: 413 when the body, or its decompressed form, exceeds `limit` bytes; 408 when it
    ///   has not arrived whole within `timeout`; 400 for a corrupt gzip stream; 415 for another
    ///   content coding.
    func collectBody(decompressingUpTo limit: Int, within timeout: Duration) async throws -> ByteBuffer {
        var body: ByteBuffer
        do {
            body = try await Self.collect(self.body, upTo: limit, within: timeout)
        } catch is NIOTooManyBytesError {
            throw ServerError.bodyTooLarge(limit)
        }
        switch headers[.contentEncoding]?.lowercased() {
        case nil, "identity":
            return body
        case "gzip":
            do {
                return try body.decompress(with: .gzip, maxSize: limit)
            } catch let error as CompressNIOError where error == .bufferOverflow {
                throw ServerError.bodyTooLarge(limit)
            } catch {
                throw ServerError(.badRequest, code: "malformed_gzip", message: "the request body is not valid gzip")
            }
        case let other?:
            throw ServerError(.unsupportedMediaType, code: "unsupported_encoding", message: "Content-Encoding '\(other)' is not supported; use gzip")
        }
    }

    /// Reads `body` whole, racing a timer. When the timer wins, the read is cancelled, which ends
    /// the connection's request stream: Hummingbird then stops reading from the client, sends the
    /// 408 and closes the connection.
    private static func collect(_ body: RequestBody, upTo limit: Int, within timeout: Duration) async throws -> ByteBuffer {
        try await withThrowingTaskGroup(of: ByteBuffer?.self) { group in
            group.addTask { try await body.collect(upTo: limit) }
            group.addTask {
                try await Task.sleep(for: timeout)
                return nil
            }
            defer { group.cancelAll() }
            guard let collected = try await group.next(), let buffer = collected else { throw ServerError.bodyTimeout(timeout) }
            return buffer
        }
    }
}
