import NIOCore
import NIOHTTP1

/// Ends connections that must end after a response, without leaving a client stuck or unanswered.
///
/// It sits between NIO's HTTP/1 decoder and Hummingbird's codec, where the request's HTTP version
/// is still known. A connection ends after a response when:
/// - the request said so: HTTP/1.0 without `Connection: keep-alive`, or `Connection: close` in
///   any case (the response then carries `Connection: close`, and `HTTP/1.0` for a 1.0 request);
/// - the response said so: an error answer with `Connection: close` (413, 408, broken framing);
/// - the request head could not be parsed: Hummingbird's bare 400 gets a JSON body here.
///
/// Then, once the response is written, the server shuts its side down (the client reads the
/// answer and then end-of-stream) and keeps reading and discarding what the client still sends,
/// so a client that writes a whole body before reading never blocks and never gets a reset before
/// it reads the answer. The connection closes when the client closes its side, or after `linger`.
final class ConnectionCloseHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// How long a finished connection keeps discarding input before it closes.
    static let defaultLinger = TimeAmount.seconds(5)

    private let linger: TimeAmount
    /// For each request not yet answered, in order: whether it asked to close, and its version.
    private var pending: [(close: Bool, version: HTTPVersion)] = []
    private var closeAfterResponse = false
    private var discarding = false
    private var lingerTask: Scheduled<Void>?
    /// Whether the request head that could not be parsed was too large, not malformed.
    private var headTooLarge = false

    init(linger: TimeAmount = defaultLinger) {
        self.linger = linger
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !discarding else { return }
        guard case .head(var head) = unwrapInboundIn(data) else { return context.fireChannelRead(data) }
        let close = !head.isKeepAlive
        pending.append((close, head.version))
        // Hummingbird stops its request loop only for this exact value.
        if close { head.headers.replaceOrAdd(name: "connection", value: "close") }
        context.fireChannelRead(wrapInboundOut(.head(head)))
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if discarding { context.read() } else { context.fireChannelReadComplete() }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard !discarding else { return }  // the rest of an unread body may well be broken
        if let error = error as? HTTPParserError, error == .headerOverflow { headTooLarge = true }
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        lingerTask?.cancel()
        lingerTask = nil
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if discarding, case ChannelEvent.inputClosed = event {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard !discarding else {
            promise?.fail(ChannelError.outputClosed)
            return
        }
        switch unwrapOutboundIn(data) {
        case .head(var head) where head.status.code >= 200:
            guard !pending.isEmpty else { return writeMalformedRequestAnswer(head, context: context, promise: promise) }
            let request = pending.removeFirst()
            if request.close { head.headers.replaceOrAdd(name: "connection", value: "close") }
            if request.close, request.version == .http1_0 { head.version = .http1_0 }
            closeAfterResponse = !head.isKeepAlive
            context.write(wrapOutboundOut(.head(head)), promise: promise)
        case .end where closeAfterResponse:
            closeAfterResponse = false
            context.writeAndFlush(data, promise: promise)
            discardUntilClosed(context: context)
        default:
            context.write(data, promise: promise)
        }
    }

    /// An answer to no request is Hummingbird's bare 400 for a request head NIO could not parse:
    /// it gets the protocol's JSON error body (`malformed_http`, or 431 `headers_too_large` for a
    /// head past NIO's size limit) and ends the connection.
    private func writeMalformedRequestAnswer(
        _ head: HTTPResponseHead, context: ChannelHandlerContext, promise: EventLoopPromise<Void>?
    ) {
        var head = head
        let error = headTooLarge ? ServerError.headersTooLarge : ServerError.malformedHTTP
        if headTooLarge { head.status = .init(statusCode: 431) }
        let body = (try? error.jsonBody()) ?? ByteBuffer()
        head.headers.replaceOrAdd(name: "content-type", value: "application/json")
        head.headers.replaceOrAdd(name: "content-length", value: String(body.readableBytes))
        head.headers.replaceOrAdd(name: "connection", value: "close")
        closeAfterResponse = true
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: promise)
    }

    /// Shuts output, then reads and drops input until the client closes or `linger` passes.
    private func discardUntilClosed(context: ChannelHandlerContext) {
        discarding = true
        context.close(mode: .output, promise: nil)
        context.read()
        let channel = context.channel
        lingerTask = channel.eventLoop.scheduleTask(in: linger) { channel.close(promise: nil) }
    }
}
