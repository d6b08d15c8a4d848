import CompressNIO
import Foundation
import Hummingbird
import NIOCore

/// Compresses response bodies with gzip when the request sends `Accept-Encoding: gzip` and the
/// body is at least `minimumSize` bytes. Answers vary by `Accept-Encoding`; a compressed body's
/// entity tag gets `-gzip` appended (``EntityTag/gzipped(_:)``), as it is another representation.
///
/// Bodies are compressed at zlib level 1, as nginx does by default: on-the-fly compression must
/// cost less than the bandwidth it saves. Level 6 made zlib half of the server's time in a
/// million-row download and only shrank pages by another fifth.
struct ResponseCompressionMiddleware<Context: RequestContext>: RouterMiddleware {
    let minimumSize: Int

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        var response = try await next(request, context)
        response.headers[.vary] = "Accept-Encoding"
        guard Self.acceptsGzip(request.headers[.acceptEncoding]),
            response.headers[.contentEncoding] == nil,
            (response.body.contentLength ?? .max) >= minimumSize
        else { return response }
        var plain = try await Self.collect(response.body)
        response.body = ResponseBody(byteBuffer: try plain.compress(with: Self.gzip))
        response.headers[.contentEncoding] = "gzip"
        if let tag = response.headers[.eTag] { response.headers[.eTag] = EntityTag.gzipped(tag) }
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
