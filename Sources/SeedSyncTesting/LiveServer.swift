import Foundation
import HummingbirdTesting
import Logging
import SeedSyncModel
import SeedSyncServer
import SeedSyncStore

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The read token of ``withLiveServer(_:token:_:)``.
public let liveServerToken = "live-test-token"
/// The write token of ``withLiveServer(_:token:_:)``: it may push change sets.
public let liveServerWriteToken = "live-write-token"
/// The admin token of ``withLiveServer(_:token:_:)``: it may register seeds.
public let liveServerAdminToken = "live-admin-token"

/// Serves `store` on a free loopback port for the duration of `body`, which gets the base URL.
///
/// ```swift
/// try await withLiveServer(store) { url in
///     let client = SyncClient(configuration: .init(serverURL: url, token: liveServerToken))
/// }
/// ```
public func withLiveServer(
    _ store: any SyncStore,
    token: String = liveServerToken,
    configure: (inout ServerConfiguration) -> Void = { _ in },
    _ body: @escaping @Sendable (URL) async throws -> Void
) async throws {
    var configuration = ServerConfiguration(
        port: 0,
        tokens: TokenSet(readTokens: [token], writeTokens: [liveServerWriteToken], adminTokens: [liveServerAdminToken]))
    configure(&configuration)
    var logger = Logger(label: "seed-server")
    logger.logLevel = .notice  // a line for each request would bury the test output
    let app = try await buildApplication(store: store, configuration: configuration, logger: logger)
    try await TestTrace.step("live server: starting, body or shutting down") {
        try await app.test(.live) { client in
            try await TestTrace.step("live server on port \(client.port!): test body") {
                try await body(URL(string: "http://127.0.0.1:\(client.port!)")!)
            }
        }
    }
}

/// The live sync requests the server at `url` holds now, from its `/metrics` (admin token).
public func heldRequests(on url: URL) async throws -> Int {
    try await metricLines(on: url)
        .first { $0.hasPrefix("seedsync_waiting_requests ") }
        .map(metricValue) ?? 0
}

/// The requests the server at `url` answered on routes whose pattern contains `route` (such as
/// `/v1/snapshot/`), from its `/metrics` (admin token): a test counts what a client asked for.
public func answeredRequests(_ route: String, on url: URL) async throws -> Int {
    try await metricLines(on: url)
        .filter { $0.hasPrefix("seedsync_http_requests_total{") && $0.contains("route=\"\(route)") }
        .map(metricValue)
        .reduce(0, +)
}

/// The lines of the `/metrics` page of the server at `url`, read with the admin token.
private func metricLines(on url: URL) async throws -> [Substring] {
    var request = URLRequest(url: url.appendingPathComponent("metrics"))
    request.setValue("Bearer \(liveServerAdminToken)", forHTTPHeaderField: "Authorization")
    let (data, _) = try await TestHTTP.data(for: request)
    return String(decoding: data, as: UTF8.self).split(separator: "\n")
}

/// The value of one metric line (`name{labels} value`), as a whole number.
private func metricValue(_ line: Substring) -> Int {
    line.split(separator: " ").last.flatMap { Double($0) }.map { Int($0) } ?? 0
}
