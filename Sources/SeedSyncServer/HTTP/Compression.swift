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
            // Compressed or binary files (a published seed, its `.gz`) gain nothing, and a range is of the stored bytes.
            response.headers[.contentType].map(Self.isCompressible) ?? true,
            (response.body.contentLength ?? .max) >= minimumSize
        else { return response }
        var plain = try await Self.collect(response.body)
        response.body = ResponseBody(byteBuffer: try plain.compress(with: Self.gzip))
        response.headers[.contentEncoding] = "gzip"
        if let tag = response.headers[.eTag] { response.headers[.eTag] = EntityTag.gzipped(tag) }
        return response
    }

    /// Whether answers of `contentType` are worth compressing: JSON and text.
    private static func isCompressible(_ contentType: String) -> Bool {
        contentType.hasPrefix("application/json") || contentType.hasPrefix("text/")
    }

    private static var gzip: CompressionAlgorithm { .gzip(configuration: .init(compressionLevel: .fastestCompression)) }

    /// The size of `bytes` compressed as an answer's body is.
    static func gzippedSize(of bytes: [UInt8]) throws -> Int {
        var buffer = ByteBuffer(bytes: bytes)
        return try buffer.compress(with: gzip).readableBytes
    }

    /// Whether an `Accept-Encoding` value allows gzip (RFC 9110 §12.5.3): `gzip` (or `x-gzip`)
    /// with a quality above 0, or else `*` with one. A coding named with `q=0` is refused even
    /// when `*` allows the rest; an item whose quality is not a valid `qvalue` (`0` to `1`, three
    /// decimals at most) is ignored.
    static func acceptsGzip(_ header: String?) -> Bool {
        guard let header else { return false }
        var gzip: Double?
        var any: Double?
        for item in header.split(separator: ",") {
            let parts = item.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            guard let coding = parts.first else { continue }
            let parameters = parts.dropFirst()
            guard let quality = parameters.first(where: { $0.hasPrefix("q=") }).map({ qvalue($0.dropFirst(2)) }) ?? 1
            else { continue }
            switch coding {
            case "gzip", "x-gzip": gzip = max(gzip ?? 0, quality)
            case "*": any = max(any ?? 0, quality)
            default: continue
            }
        }
        return (gzip ?? any ?? 0) > 0
    }

    /// A `qvalue`: `0`, `0.5`, `0.001`, `1`, `1.000`; `nil` for anything else.
    private static func qvalue(_ text: Substring) -> Double? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), parts[0] == "0" || parts[0] == "1" else { return nil }
        if parts.count == 2 {
            guard parts[1].count <= 3, parts[1].allSatisfy(\.isASCII), parts[1].allSatisfy(\.isNumber) else {
                return nil
            }
            guard parts[0] == "0" || parts[1].allSatisfy({ $0 == "0" }) else { return nil }
        }
        return Double(text)
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
