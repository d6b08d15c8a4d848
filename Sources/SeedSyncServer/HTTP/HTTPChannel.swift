import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1

/// Hummingbird's HTTP/1.1 channel with a ``ConnectionCloseHandler`` right after NIO's request
/// decoder, the only place where a request's HTTP version is still known; and a request whose
/// connection closes under it is cancelled: a held live sync request whose client went away
/// (reset, or closed) frees its slot at once, not when its wait would have ended.
struct SeedHTTP1Channel: ServerChildChannel {
    typealias Value = HTTP1Channel.Value
    let base: HTTP1Channel

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        base.setup(channel: channel, logger: logger).flatMapThrowing { value in
            let pipeline = channel.pipeline.syncOperations
            let decoder = try pipeline.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
            try pipeline.addHandler(ConnectionCloseHandler(), position: .after(decoder))
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        // The connection's requests run in a task of their own, which the channel's close cancels:
        // one task and a callback, where a task group would hold two child tasks per connection.
        let requests = Task { await base.handle(value: value, logger: logger) }
        value.channel.closeFuture.whenComplete { _ in requests.cancel() }
        await withTaskCancellationHandler {
            await requests.value
        } onCancel: {
            requests.cancel()
        }
    }
}

extension HTTPServerBuilder {
    /// HTTP/1.1 as the sync server speaks it: see ``SeedHTTP1Channel``.
    static func seedHTTP1(idleTimeout: TimeAmount) -> HTTPServerBuilder {
        HTTPServerBuilder { responder in
            SeedHTTP1Channel(base: HTTP1Channel(responder: responder, configuration: .init(idleTimeout: idleTimeout)))
        }
    }
}
