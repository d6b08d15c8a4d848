import Foundation
import Hummingbird
import HummingbirdTesting
import SeedSyncServer
import SeedSyncTesting
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Clients that hold a connection without finishing a request: one that says nothing is
/// disconnected after the idle timeout, one that trickles its body after the body timeout.
@Suite struct IdleTimeoutTests {
    @Test func silentConnectionsAreClosed() async throws {
        try await withTemporaryDirectory { directory in
            let store = try await Fixtures.emptyStore(in: directory)
            let app = try await buildApplication(
                store: store, configuration: testConfiguration { $0.idleTimeout = .seconds(1) })
            try await app.test(.live) { client in
                let connection = try RawConnection(port: client.port!, timeout: 10)
                defer { connection.close() }
                let started = Date()
                let (_, closed) = try await offPool { connection.receiveAll() }
                #expect(closed, "the server closes the connection (recv returns 0 at end of stream)")
                #expect(Date().timeIntervalSince(started) < 9)
            }
        }
    }

    /// A byte of body every 100 ms keeps the connection from ever being idle; the body timeout still ends it.
    @Test func trickledBodiesGet408AndTheConnectionIsClosed() async throws {
        try await withTemporaryDirectory { directory in
            let store = try await Fixtures.emptyStore(in: directory)
            let configuration = testConfiguration {
                $0.idleTimeout = .seconds(30)
                $0.requestBodyTimeout = .seconds(1)
            }
            let app = try await buildApplication(store: store, configuration: configuration)
            try await app.test(.live) { client in
                let connection = try RawConnection(port: client.port!, timeout: 15)
                defer { connection.close() }
                let socket = connection.descriptor
                let head =
                    "POST /v1/sync HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(TestTokens.read)\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
                #expect(connection.send(head))
                // The trickle stops before the socket is closed, so it never writes to a reused descriptor.
                let stop = NSCondition()
                let stopped = StopFlag()
                let finished = DispatchSemaphore(value: 0)
                Thread {
                    stop.lock()
                    while !stopped.isSet, send(socket, "{", 1, Int32(MSG_NOSIGNAL)) == 1 {
                        _ = stop.wait(until: Date() + 0.1)
                    }
                    stop.unlock()
                    finished.signal()
                }.start()
                defer {
                    stop.withLock {
                        stopped.isSet = true
                        stop.signal()
                    }
                    finished.wait()
                }
                let started = Date()
                let (answer, _) = try await offPool { connection.receiveAll() }
                #expect(answer.hasPrefix("HTTP/1.1 408"), "\(answer)")
                #expect(answer.contains("body_timeout"))
                #expect(
                    Date().timeIntervalSince(started) < 10,
                    "the connection is closed, not drained while the client trickles")
            }
        }
    }
}

/// Whether a trickling thread should stop; read and written under its test's `NSCondition`.
private final class StopFlag: @unchecked Sendable {
    var isSet = false
}
