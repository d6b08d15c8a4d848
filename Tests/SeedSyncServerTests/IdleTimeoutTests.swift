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

/// A client that connects and then says nothing is disconnected after the idle timeout.
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
