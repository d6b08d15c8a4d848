import CompressNIO
import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import SeedSyncModel
import SeedSyncSQLiteStore
import SeedSyncServer
import SeedSyncStore
import SeedSyncTesting
import Testing

/// A real server on loopback: gzip negotiation both ways.
@Suite struct LiveServerTests {
    @Test func gzipIsNegotiatedBothWays() async throws {
        try await withTemporaryDirectory { directory in
            let store = try await Fixtures.demoStore(events: 400, locations: 10, in: directory)
            let app = try await buildApplication(store: store, configuration: testConfiguration())
            try await app.test(.live) { client in
                let uri = "/v1/snapshot/events?limit=200"
                let plain = try await client.execute(uri: uri, method: .get, headers: headers())
                #expect(plain.status == .ok)
                #expect(plain.headers[.contentEncoding] == nil)
                #expect(plain.headers[.vary] == "Accept-Encoding")

                for accept in ["gzip", "deflate, gzip;q=0.8", "*", "GZIP;Q=1.000", "x-gzip", "br;q=0, *;q=0.5"] {
                    let compressed = try await client.execute(
                        uri: uri, method: .get, headers: headers(token: TestTokens.read, [.acceptEncoding: accept]))
                    #expect(compressed.headers[.contentEncoding] == "gzip", "\(accept)")
                    #expect(compressed.body.readableBytes < plain.body.readableBytes / 3)
                    #expect(compressed.headers[.contentLength] == String(compressed.body.readableBytes))
                    var body = compressed.body
                    #expect(try body.decompress(with: .gzip) == plain.body)
                }
                // RFC 9110: a coding named with q=0 is refused even where `*` allows the rest; an
                // invalid quality does not count.
                for refused in [
                    "gzip;q=0", "identity", "br", "gzip;q=0, *", "*, gzip;q=0.000", "gzip;q=abc", "gzip;q=2",
                    "gzip;q=0.0001", "gzip;q=-1", "*;q=1.5",
                ] {
                    let response = try await client.execute(
                        uri: uri, method: .get, headers: headers(token: TestTokens.read, [.acceptEncoding: refused]))
                    #expect(response.headers[.contentEncoding] == nil, "\(refused)")
                    #expect(response.body == plain.body)
                }
                // Small answers are not worth compressing.
                let health = try await client.execute(uri: "/health", method: .get, headers: [.acceptEncoding: "gzip"])
                #expect(health.headers[.contentEncoding] == nil)

                var request = ByteBuffer(string: #"{"maxRevision": 1, "changeSets": [], "limit": 10}"#)
                let gzipped = try request.compress(with: .gzip)
                let sync = try await client.execute(
                    uri: "/v1/sync", method: .post,
                    headers: headers(
                        token: TestTokens.read, [.contentEncoding: "gzip", .contentType: "application/json"]),
                    body: gzipped
                )
                #expect(sync.status == .ok)
                #expect(try JSONDecoder().decode(SyncResponse.self, from: Data(buffer: sync.body)).maxRevision == 1)
            }
        }
    }
}
