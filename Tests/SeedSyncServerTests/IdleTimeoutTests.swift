import Foundation
import Hummingbird
import HummingbirdTesting
import SeedSyncServer
import SeedSyncTesting
import Testing

#if canImport(Glibc)
import Glibc
private let systemConnect = Glibc.connect
private let streamSocket = Int32(SOCK_STREAM.rawValue)
#elseif canImport(Darwin)
import Darwin
private let systemConnect = Darwin.connect
private let streamSocket = SOCK_STREAM
#endif

/// Clients that hold a connection without finishing a request: one that says nothing is
/// disconnected after the idle timeout, one that trickles its body after the body timeout.
@Suite struct IdleTimeoutTests {
    @Test func silentConnectionsAreClosed() async throws {
        try await withTemporaryDirectory { directory in
            let store = try await Fixtures.emptyStore(in: directory)
            let app = try await buildApplication(store: store, configuration: testConfiguration { $0.idleTimeout = .seconds(1) })
            try await app.test(.live) { client in
                let socket = try connect(port: client.port!)
                defer { close(socket) }
                var timeout = timeval(tv_sec: 10, tv_usec: 0)
                setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                let started = Date()
                var byte: UInt8 = 0
                let received = recv(socket, &byte, 1, 0)
                #expect(received == 0, "the server closes the connection (recv returns 0 at end of stream)")
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
                let socket = try connect(port: client.port!)
                defer { close(socket) }
                var timeout = timeval(tv_sec: 15, tv_usec: 0)
                setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                let head = "POST /v1/sync HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(TestTokens.read)\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
                #expect(send(socket, head, head.utf8.count, Int32(MSG_NOSIGNAL)) == head.utf8.count)
                // The trickle stops before the socket is closed, so it never writes to a reused descriptor.
                let stop = NSCondition()
                nonisolated(unsafe) var stopped = false
                let finished = DispatchSemaphore(value: 0)
                Thread {
                    stop.lock()
                    while !stopped, send(socket, "{", 1, Int32(MSG_NOSIGNAL)) == 1 { _ = stop.wait(until: Date() + 0.1) }
                    stop.unlock()
                    finished.signal()
                }.start()
                defer {
                    stop.withLock { stopped = true; stop.signal() }
                    finished.wait()
                }
                let started = Date()
                let answer = try await offPool { receiveUntilClosed(socket) }
                #expect(answer.hasPrefix("HTTP/1.1 408"), "\(answer)")
                #expect(answer.contains("body_timeout"))
                #expect(Date().timeIntervalSince(started) < 10, "the connection is closed, not drained while the client trickles")
            }
        }
    }

    /// Everything the server sends until it closes the connection (or the receive timeout passes).
    private func receiveUntilClosed(_ socket: Int32) -> String {
        var received = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(socket, &buffer, buffer.count, 0)
            guard count > 0 else { return String(decoding: received, as: UTF8.self) }
            received += buffer[0..<count]
        }
    }

    private func connect(port: Int) throws -> Int32 {
        let descriptor = socket(AF_INET, streamSocket, 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                systemConnect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard descriptor >= 0, result == 0 else { throw POSIXError(.ECONNREFUSED) }
        return descriptor
    }
}
