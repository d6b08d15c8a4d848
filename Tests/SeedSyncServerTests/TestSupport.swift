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

#if canImport(Glibc)
import Glibc
private let systemConnect = Glibc.connect
private let systemClose = Glibc.close
private let systemSend = Glibc.send
private let streamSocket = Int32(SOCK_STREAM.rawValue)
#elseif canImport(Darwin)
import Darwin
private let systemConnect = Darwin.connect
private let systemClose = Darwin.close
private let systemSend = Darwin.send
private let streamSocket = SOCK_STREAM
#endif

/// Tokens every server test uses.
enum TestTokens {
    static let read = "read-token-1"
    static let write = "write-token-1"
    static let admin = "admin-token-1"
    static let set = TokenSet(readTokens: [read, "read-token-2"], writeTokens: [write], adminTokens: [admin])
}

func testConfiguration(_ change: (inout ServerConfiguration) -> Void = { _ in }) -> ServerConfiguration {
    var configuration = ServerConfiguration(port: 0, tokens: TestTokens.set)
    change(&configuration)
    return configuration
}

func headers(token: String? = TestTokens.read, _ extra: HTTPFields = [:]) -> HTTPFields {
    var fields = extra
    if let token { fields[.authorization] = "Bearer \(token)" }
    return fields
}

func body(_ json: String) -> ByteBuffer {
    ByteBuffer(string: json)
}

/// The `code` of an error answer, or `nil` when the body is not one.
func errorCode(_ response: TestResponse) -> String? {
    (try? JSONDecoder().decode(ErrorResponse.self, from: Data(buffer: response.body)))?.error.code
}

func decode<T: Decodable>(_ type: T.Type, _ response: TestResponse) throws -> T {
    try JSONDecoder().decode(type, from: Data(buffer: response.body))
}

/// A plain TCP client on loopback, for what HTTP clients will not do: broken framing, HTTP/1.0,
/// a whole body written before the answer is read, a reset mid-body. Calls block: run them off
/// the cooperative pool (``offPool(_:)``) when the server must make progress meanwhile.
struct RawConnection: Sendable {
    let descriptor: Int32

    /// Connects to `127.0.0.1:port`; a send or receive that waits longer than `timeout` seconds fails.
    init(port: Int, timeout: Int = 10) throws {
        descriptor = socket(AF_INET, streamSocket, 0)
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
        var limit = timeval(tv_sec: timeout, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Sends all of `bytes`; false when the connection fails or a send times out (the server stopped reading).
    @discardableResult
    func send(_ bytes: some Collection<UInt8>) -> Bool {
        Array(bytes).withUnsafeBytes { buffer in
            var sent = 0
            while sent < buffer.count {
                let count = systemSend(descriptor, buffer.baseAddress! + sent, buffer.count - sent, Int32(MSG_NOSIGNAL))
                guard count > 0 else { return false }
                sent += count
            }
            return true
        }
    }

    @discardableResult
    func send(_ text: String) -> Bool { send(Array(text.utf8)) }

    /// Everything received until the server closes the connection (`closed`) or a receive times out.
    func receiveAll() -> (text: String, closed: Bool) {
        var received = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = recv(descriptor, &buffer, buffer.count, 0)
            guard count > 0 else { return (String(decoding: received, as: UTF8.self), count == 0) }
            received += buffer[0..<count]
        }
    }

    /// Half-closes: the server reads end-of-stream.
    func shutdownOutput() { shutdown(descriptor, Int32(SHUT_WR)) }

    /// Closes with a reset (RST) instead of an orderly end, as a crashed client would.
    func reset() {
        var immediately = linger(l_onoff: 1, l_linger: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_LINGER, &immediately, socklen_t(MemoryLayout<linger>.size))
        _ = systemClose(descriptor)
    }

    func close() { _ = systemClose(descriptor) }
}

/// A `GET` answer that caches may keep: its message, its body, and its cache headers.
struct CacheableAnswer<Message> {
    var message: Message
    var body: String
    var cacheControl: String?
    var eTag: String?
}

/// `GET uri` with a read token, expected to answer 200, its body read with `read`.
func cacheableAnswer<Message>(
    _ client: any TestClientProtocol, _ uri: String, _ read: @escaping @Sendable (JSONValue) throws -> Message
) async throws -> CacheableAnswer<Message> {
    try await client.execute(uri: uri, method: .get, headers: headers()) { response in
        #expect(response.status == .ok, "\(uri): \(String(buffer: response.body))")
        let body = String(buffer: response.body)
        return CacheableAnswer(
            message: try read(JSONParser.parse(Array(body.utf8))), body: body,
            cacheControl: response.headers[.cacheControl], eTag: response.headers[.eTag])
    }
}
