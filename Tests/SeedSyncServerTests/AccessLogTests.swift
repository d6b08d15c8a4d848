import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import SeedSyncServer
import SeedSyncTesting
import Testing

/// The server's access log: a line per answered request, error answers included, and never a token.
@Suite struct AccessLogTests {
    @Test func eachRequestIsLoggedOnceWithItsStatusAndNeverItsToken() async throws {
        try await withTemporaryDirectory { directory in
            let store = try await Fixtures.demoStore(events: 20, locations: 5, in: directory)
            let recorder = LogRecorder()
            let logger = Logger(label: "seed-server") { _ in recorder }
            let app = try await buildApplication(store: store, configuration: testConfiguration(), logger: logger)
            let wrongToken = "wrong-token-that-must-not-be-logged"
            try await app.test(.live) { client in
                _ = try await client.execute(uri: "/v1/schema", method: .get, headers: headers())
                _ = try await client.execute(uri: "/v1/snapshot/ghosts", method: .get, headers: headers())
                _ = try await client.execute(
                    uri: "/v1/sync", method: .post, headers: headers(token: wrongToken),
                    body: body(#"{"maxRevision": 0, "changeSets": []}"#))
            }
            let requests = recorder.lines.filter { $0.contains("/v1/") }
            #expect(requests.count == 3, "\(requests)")
            #expect(requests.contains { $0.hasPrefix("GET /v1/schema 200") })
            #expect(requests.contains { $0.hasPrefix("GET /v1/snapshot/ghosts 404") })
            #expect(requests.contains { $0.hasPrefix("POST /v1/sync 401") })
            #expect(!recorder.lines.contains { $0.contains(TestTokens.read) || $0.contains(wrongToken) })
        }
    }
}

/// Keeps every log line, with its metadata, for a test to read.
final class LogRecorder: LogHandler, @unchecked Sendable {
    private let lock = NSLock()
    private var recorded: [(level: Logger.Level, line: String)] = []
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    var lines: [String] { lock.withLock { recorded.map(\.line) } }

    /// The lines logged at `level` or above.
    func lines(atLeast level: Logger.Level) -> [String] {
        lock.withLock { recorded.filter { $0.level >= level }.map(\.line) }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let all = metadata.merging(event.metadata ?? [:]) { $1 }
        lock.withLock { recorded.append((event.level, "\(event.message) \(all)")) }
    }
}
