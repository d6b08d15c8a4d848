import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import SeedSyncModel

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A host of published seeds that misbehaves on purpose, in front of a real `seed-server`: it
/// passes each request on (its `Range`, `If-Range` and token included) and answers with what the
/// origin said, changed as ``Plan`` says. A test double for what the server cannot be made to do:
/// a connection cut at a byte, a stall, a host that ignores ranges, a changed or altered file.
///
/// ```swift
/// try await SeedHost.with(origin: served.url, plan: { request in
///     request.number == 1 ? .init(cutAfter: 10_000) : .init()
/// }) { host, log in
///     // the importer downloads from host.appendingPathComponent("v1/seeds/…")
/// }
/// ```
public enum SeedHost {
    /// What the host does with one request.
    public struct Plan: Sendable {
        /// Cut the connection after this many body bytes.
        public var cutAfter: Int?
        /// Stop sending after this many body bytes, hold the connection ``stallSeconds``, then cut
        /// it (a client should give up first).
        public var stallAfter: Int?
        public var stallSeconds: Double
        /// Drop `Range` and `If-Range`: answer 200 with the whole file, as a host without ranges.
        public var ignoreRange: Bool
        /// Answer this status with no body instead.
        public var status: Int?
        /// Flip this byte of the body (an offset in the body sent).
        public var flipByte: Int?
        /// Append this many bytes after the body (a longer file).
        public var appendBytes: Int
        /// Send this `ETag` instead of the origin's (a file changed since: the origin then sees an
        /// `If-Range` it does not know).
        public var eTag: String?
        /// Send this `Content-Range` instead of the origin's (a host answering another range).
        public var contentRange: String?
        /// Send the body as stored but say this `Content-Encoding` (a host that codes what it was
        /// asked to send as stored).
        public var contentEncoding: String?

        public init(
            cutAfter: Int? = nil, stallAfter: Int? = nil, ignoreRange: Bool = false, status: Int? = nil,
            flipByte: Int? = nil, appendBytes: Int = 0, eTag: String? = nil, stallSeconds: Double = 30,
            contentRange: String? = nil, contentEncoding: String? = nil
        ) {
            self.contentRange = contentRange
            self.contentEncoding = contentEncoding
            self.stallSeconds = stallSeconds
            self.cutAfter = cutAfter
            self.stallAfter = stallAfter
            self.ignoreRange = ignoreRange
            self.status = status
            self.flipByte = flipByte
            self.appendBytes = appendBytes
            self.eTag = eTag
        }
    }

    /// One request as the host saw it.
    public struct Request: Sendable, Hashable {
        /// 1 for the first request, 2 for the next, …
        public var number: Int
        /// 1 for the first request of ``path``, 2 for the next of the same path, …: a plan keyed on
        /// it is not shifted by a retry of another file's request (a manifest timed out under load).
        public var attempt: Int
        public var path: String
        public var range: String?
        public var ifRange: String?
        /// Whether the request carried an `Authorization` header.
        public var authorized: Bool
        /// Body bytes sent before the answer ended (or was cut).
        public var sent: Int
    }

    /// Runs `body` with the host on a free loopback port: its base URL, and the requests it took.
    /// The host asks the origin with `token`, as a CDN with credentials of its own does.
    package static func with(
        origin: URL, token: String = liveServerToken, plan: @escaping @Sendable (Request) -> Plan,
        _ body: @escaping @Sendable (URL, LockedValue<[Request]>) async throws -> Void
    ) async throws {
        let log = LockedValue<[Request]>([])
        let router = Router()
        let answer: @Sendable (Hummingbird.Request, BasicRequestContext) async throws -> Response = { request, _ in
            var seen = Request(
                number: 0, attempt: 0, path: request.uri.path, range: request.headers[.range],
                ifRange: request.headers[.ifRange],
                authorized: request.headers[.authorization] != nil, sent: 0)
            let number = log.update { requests in
                seen.number = requests.count + 1
                seen.attempt = requests.count { $0.path == seen.path } + 1
                requests.append(seen)
                return seen.number
            }
            let plan = plan(seen)
            if let status = plan.status { return Response(status: .init(code: status)) }
            let (data, response) = try await TestHTTP.data(
                for: forwarded(request, to: origin, token: token, plan: plan))
            var bytes = [UInt8](data)
            if let flip = plan.flipByte, flip < bytes.count { bytes[flip] ^= 0x01 }
            bytes += [UInt8](repeating: 0x2A, count: plan.appendBytes)
            var headers = HTTPFields()
            headers[.contentRange] = plan.contentRange ?? response.value(forHTTPHeaderField: "Content-Range")
            headers[.contentEncoding] = plan.contentEncoding
            headers[.eTag] = plan.eTag ?? response.value(forHTTPHeaderField: "ETag")
            headers[.contentType] = response.value(forHTTPHeaderField: "Content-Type")
            headers[.acceptRanges] = response.value(forHTTPHeaderField: "Accept-Ranges")
            headers[.contentLength] = String(bytes.count)
            let body = bytes
            return Response(
                status: .init(code: response.statusCode), headers: headers,
                body: ResponseBody { writer in
                    try await send(body, plan: plan, to: &writer) { sent in
                        log.update { $0[number - 1].sent = sent }
                    }
                })
        }
        router.get("**", use: answer)
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await app.test(.live) { client in
            try await body(URL(string: "http://127.0.0.1:\(client.port!)")!, log)
        }
    }

    private static func forwarded(_ request: Hummingbird.Request, to origin: URL, token: String, plan: Plan)
        -> URLRequest
    {
        var forwarded = URLRequest(url: URL(string: origin.absoluteString + request.uri.description)!)
        forwarded.timeoutInterval = 10
        forwarded.setValue("identity", forHTTPHeaderField: "Accept-Encoding")
        forwarded.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        if !plan.ignoreRange {
            forwarded.setValue(request.headers[.range], forHTTPHeaderField: "Range")
            forwarded.setValue(request.headers[.ifRange], forHTTPHeaderField: "If-Range")
        }
        return forwarded
    }

    /// Writes `bytes` in chunks of 4 KiB, cut or stalled where `plan` says.
    private static func send(
        _ bytes: [UInt8], plan: Plan, to writer: inout any ResponseBodyWriter, sent: @Sendable (Int) -> Void
    ) async throws {
        var offset = 0
        while offset < bytes.count {
            if let cut = plan.cutAfter, offset >= cut { throw CancellationError() }
            if let stall = plan.stallAfter, offset >= stall {
                try await Task.sleep(for: .seconds(plan.stallSeconds))
                throw CancellationError()
            }
            let end = min(bytes.count, offset + 4096, plan.cutAfter ?? .max, plan.stallAfter ?? .max)
            try await writer.write(ByteBuffer(bytes: bytes[offset..<max(end, offset + 1)]))
            offset = max(end, offset + 1)
            sent(offset)
        }
        try await writer.finish(nil)
    }
}
