public import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A proxy on loopback in front of an origin that may change what it passes on: a cache or a CDN
/// that serves damaged or altered answers, for the tests of what a client refuses; or that does
/// something at the moment an answer passes (a write on the origin between two of a client's reads).
///
/// ```swift
/// try await withAlteringProxy(to: origin) { answer in
///     answer.path == "/v1/changes" ? answer.replacingBody(with: forged) : answer
/// } _: { proxy in
///     // point a client at `proxy`
/// }
/// ```
public struct ProxiedAnswer: Sendable {
    /// The request's path (`/v1/changes`) and query (`after=4&schemaVersion=1`, or empty).
    public var path: String
    public var query: String
    public var status: Int
    /// The response headers passed on: `Content-Type`, `ETag`, `Cache-Control`, `SeedSync-Signature`.
    public var headers: [String: String]
    /// The body, uncompressed.
    public var body: Data
}

/// Runs `body` with the URL of a proxy to `origin` whose answers `alter` may change; requests
/// go on unchanged (method, path, query, `Authorization`, `Content-Type` and body).
public func withAlteringProxy(
    to origin: URL, alter: @escaping @Sendable (ProxiedAnswer) async throws -> ProxiedAnswer,
    _ body: @escaping @Sendable (URL) async throws -> Void
) async throws {
    let passedHeaders = ["Content-Type", "ETag", "Cache-Control", "SeedSync-Signature"]
    let router = Router()
    let forward: @Sendable (Request, BasicRequestContext) async throws -> Response = { request, _ in
        var forwarded = URLRequest(url: URL(string: origin.absoluteString + request.uri.description)!)
        forwarded.httpMethod = request.method.rawValue
        forwarded.timeoutInterval = 10
        for name in [HTTPField.Name.authorization, .contentType] {
            if let value = request.headers[name] { forwarded.setValue(value, forHTTPHeaderField: name.rawName) }
        }
        let sent = try await request.body.collect(upTo: 1 << 20)
        if sent.readableBytes > 0 { forwarded.httpBody = Data(buffer: sent) }
        let (data, response) = try await TestHTTP.data(for: forwarded)
        var headers: [String: String] = [:]
        for name in passedHeaders { headers[name] = response.value(forHTTPHeaderField: name) }
        let answer = try await alter(
            ProxiedAnswer(
                path: request.uri.path, query: request.uri.query ?? "", status: response.statusCode, headers: headers,
                body: data))
        var fields = HTTPFields()
        for (name, value) in answer.headers { fields[HTTPField.Name(name)!] = value }
        return Response(
            status: HTTPResponse.Status(code: answer.status), headers: fields,
            body: .init(byteBuffer: ByteBuffer(bytes: answer.body)))
    }
    router.get("**", use: forward)
    router.post("**", use: forward)
    let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
    try await app.test(.live) { client in
        try await body(URL(string: "http://127.0.0.1:\(client.port!)")!)
    }
}
