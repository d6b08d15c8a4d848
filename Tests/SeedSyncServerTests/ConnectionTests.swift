import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import SeedSyncModel
import SeedSyncServer
import SeedSyncTesting
import Testing

/// Connection handling on a real loopback server, with raw sockets for what HTTP clients will not
/// send: broken chunked framing, hang-ups mid-body, a whole body written before the answer is
/// read, HTTP/1.0. See PROTOCOL.md §2.
@Suite struct ConnectionTests {
    /// Serves an empty store with `configuration`, logging to `recorder`, for the duration of `body`.
    func withServer(
        _ configuration: ServerConfiguration = testConfiguration(),
        recorder: LogRecorder = LogRecorder(),
        _ body: @escaping @Sendable (Int) async throws -> Void
    ) async throws {
        try await withTemporaryDirectory { directory in
            let store = try await Fixtures.emptyStore(in: directory)
            let logger = Logger(label: "seed-server") { _ in recorder }
            let app = try await buildApplication(store: store, configuration: configuration, logger: logger)
            try await app.test(.live) { client in try await body(client.port!) }
        }
    }

    static func postHead(contentLength: Int? = nil, _ extra: [String] = []) -> String {
        var lines = [
            "POST /v1/sync HTTP/1.1", "Host: 127.0.0.1", "Authorization: Bearer \(TestTokens.read)",
            "Content-Type: application/json",
        ]
        if let contentLength { lines.append("Content-Length: \(contentLength)") }
        return (lines + extra).joined(separator: "\r\n") + "\r\n\r\n"
    }

    @Test func malformedChunkedBodiesAre400AndNotLoggedAsErrors() async throws {
        let recorder = LogRecorder()
        try await withServer(recorder: recorder) { port in
            let connection = try RawConnection(port: port, timeout: 10)
            defer { connection.close() }
            #expect(
                connection.send(
                    Self.postHead(["Transfer-Encoding: chunked"]) + "ZZ\r\n{\"maxRevision\": 0}\r\n0\r\n\r\n"))
            let (answer, closed) = try await offPool { connection.receiveAll() }
            #expect(answer.hasPrefix("HTTP/1.1 400"), "\(answer)")
            #expect(errorCode(inRawAnswer: answer) == "malformed_http")
            #expect(closed, "broken framing ends the connection")
            #expect(await recorder.waitForLine(prefix: "POST /v1/sync 400"))
            #expect(recorder.lines(atLeast: .notice).isEmpty, "\(recorder.lines(atLeast: .notice))")
        }
    }

    /// A request head NIO cannot parse gets the protocol's JSON error too, and the connection ends.
    @Test func unparsableRequestHeadsGetAJSON400AndAreClosed() async throws {
        try await withServer { port in
            let connection = try RawConnection(port: port, timeout: 10)
            defer { connection.close() }
            #expect(connection.send("GET /health HTTP/1.1\r\nHost 127.0.0.1\r\n\r\n"))
            let (answer, closed) = try await offPool { connection.receiveAll() }
            #expect(answer.hasPrefix("HTTP/1.1 400"), "\(answer)")
            #expect(errorCode(inRawAnswer: answer) == "malformed_http")
            #expect(closed)
        }
    }

    /// A request head past NIO's 80 KiB (a 100 KB `If-None-Match`) is 431 `headers_too_large`
    /// saying so, not "broken framing", and the connection ends.
    @Test func aHugeRequestHeadIs431() async throws {
        try await withServer { port in
            let connection = try RawConnection(port: port, timeout: 10)
            defer { connection.close() }
            let tag = "\"" + String(repeating: "a", count: 100_000) + "\""
            #expect(
                connection.send(
                    "GET /v1/changes?after=0&schemaVersion=3 HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                        + "Authorization: Bearer \(TestTokens.read)\r\nIf-None-Match: \(tag)\r\n\r\n"))
            let (answer, closed) = try await offPool { connection.receiveAll() }
            #expect(answer.hasPrefix("HTTP/1.1 431"), "\(answer.prefix(300))")
            #expect(errorCode(inRawAnswer: answer) == "headers_too_large")
            #expect(closed)
        }
    }

    /// A client that closes (FIN) or resets (RST) its connection halfway through a body went away;
    /// the server logs the request at info, never an error.
    @Test(arguments: [false, true])
    func clientsHangingUpMidBodyAreNotServerFailures(reset: Bool) async throws {
        let recorder = LogRecorder()
        try await withServer(recorder: recorder) { port in
            let connection = try RawConnection(port: port, timeout: 10)
            #expect(connection.send(Self.postHead(contentLength: 1_000) + #"{"maxRevision": "#))
            if reset {
                try await Task.sleep(for: .milliseconds(300))  // the server is reading the body by then
                connection.reset()
            } else {
                connection.shutdownOutput()
                let (answer, _) = try await offPool { connection.receiveAll() }
                #expect(errorCode(inRawAnswer: answer) == "incomplete_body", "\(answer)")
                connection.close()
            }
            #expect(await recorder.waitForLine(prefix: "POST /v1/sync 400"), "\(recorder.lines)")
            #expect(recorder.lines(atLeast: .notice).isEmpty, "\(recorder.lines(atLeast: .notice))")
        }
    }

    /// A client that writes its whole body before reading (as Python's urllib does) gets the early
    /// 413 and then end-of-stream: the server reads and drops the rest instead of leaving the
    /// client blocked on a full socket, or draining an unbounded body on a kept-alive connection.
    @Test(arguments: ["Connection: close", "Connection: Close", nil])
    func earlyAnswersCloseTheConnectionWhileTheClientStillWrites(connectionHeader: String?) async throws {
        let configuration = testConfiguration { $0.maxRequestBodySize = 1 << 20 }
        try await withServer(configuration) { port in
            let connection = try RawConnection(port: port, timeout: 5)  // a send blocked this long fails
            defer { connection.close() }
            let size = 20 << 20
            #expect(connection.send(Self.postHead(contentLength: size, connectionHeader.map { [$0] } ?? [])))
            let sent = try await offPool { connection.send([UInt8](repeating: 0x20, count: size)) }
            #expect(sent, "the whole body is accepted, never left blocked")
            let (answer, closed) = try await offPool { connection.receiveAll() }
            #expect(answer.hasPrefix("HTTP/1.1 413"), "\(answer.prefix(200))")
            #expect(answer.lowercased().contains("connection: close"))
            #expect(errorCode(inRawAnswer: answer) == "body_too_large")
            #expect(closed, "the answer is followed by end-of-stream")
        }
    }

    /// A declared length one byte over the limit is answered at once, without waiting for a body
    /// that never comes (the body time limit is 30 s; the answer must come long before).
    @Test func aDeclaredLengthOverTheLimitIsAnsweredBeforeTheBody() async throws {
        let configuration = testConfiguration { $0.maxRequestBodySize = 1 << 20 }
        try await withServer(configuration) { port in
            let connection = try RawConnection(port: port, timeout: 5)
            defer { connection.close() }
            let started = ContinuousClock.now
            #expect(connection.send(Self.postHead(contentLength: (1 << 20) + 1, [])))
            let (answer, _) = try await offPool { connection.receiveAll() }
            #expect(answer.hasPrefix("HTTP/1.1 413"), "\(answer.prefix(200))")
            #expect(ContinuousClock.now - started < .seconds(4), "answered before any body arrived")
        }
    }

    @Test func http10RequestsWithoutKeepAliveAreAnsweredAndClosed() async throws {
        try await withServer { port in
            let connection = try RawConnection(port: port, timeout: 5)
            defer { connection.close() }
            #expect(connection.send("GET /health HTTP/1.0\r\n\r\n"))
            let (answer, closed) = try await offPool { connection.receiveAll() }
            #expect(answer.hasPrefix("HTTP/1.0 200"), "\(answer)")
            #expect(answer.lowercased().contains("connection: close"))
            #expect(answer.hasSuffix(#"{"status":"ok"}"#))
            #expect(closed, "HTTP/1.0 without keep-alive closes after the answer")
        }
    }
}

/// The `code` of an error answer read off a raw socket, or `nil` when its body is not one.
func errorCode(inRawAnswer answer: String) -> String? {
    guard let end = answer.range(of: "\r\n\r\n") else { return nil }
    return (try? JSONDecoder().decode(ErrorResponse.self, from: Data(answer[end.upperBound...].utf8)))?.error.code
}

extension LogRecorder {
    /// Waits up to five seconds for a line starting with `prefix`: the access log line comes once
    /// the server has answered, whether or not the client read the answer.
    func waitForLine(prefix: String) async -> Bool {
        for _ in 0..<100 {
            if lines.contains(where: { $0.hasPrefix(prefix) }) { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return false
    }
}
