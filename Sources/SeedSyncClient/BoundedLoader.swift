import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Loads HTTP responses for one ``SyncClient``, refusing bodies over a size limit as they arrive
/// (a declared `Content-Length` over the limit is refused before any body is read), and counts
/// the body bytes it received.
///
/// The limit counts the bytes the session delivers, that is after gzip decompression, so a small
/// compressed answer cannot expand past it. Every loader of the process shares one `URLSession`
/// (``SharedSession``): a session per client kept file descriptors open after the client was gone
/// (about four each on Linux), which an app that syncs for days, or a test suite, ran out of.
final class BoundedLoader: @unchecked Sendable {
    /// A load that ended without a complete answer.
    enum Failure: Error {
        case tooLarge(limit: Int)
        case transport(URLError)
    }

    private let lock = NSLock()
    private var received: Int64 = 0

    /// Body bytes delivered so far over all requests, after decompression.
    var bytesReceived: Int64 { lock.withLock { received } }

    /// The response and its whole body, or a ``Failure``.
    ///
    /// The load ends whatever the transport does: when the calling task is cancelled (even before
    /// the request started), and at the latest 4 × the request's timeout + 60 s after it began
    /// (`URLError.timedOut`), besides the request's own idle timeout.
    func load(_ request: URLRequest, limit: Int) async throws -> (HTTPURLResponse, Data) {
        try await SharedSession.shared.load(request, limit: limit, for: self)
    }

    /// Cancels the loads still going on (the client is gone).
    func cancelAll() {
        SharedSession.shared.cancelAll(of: self)
    }

    fileprivate func count(_ bytes: Int) {
        lock.withLock { received += Int64(bytes) }
    }
}

/// The one `URLSession` of the process and its delegate: each task's answer goes to the load
/// that started it, by task identifier.
private final class SharedSession: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    static let shared = SharedSession()

    private struct Pending {
        var data = Data()
        let limit: Int
        var response: HTTPURLResponse?
        var failure: BoundedLoader.Failure?
        let continuation: CheckedContinuation<(HTTPURLResponse, Data), any Error>
        let deadline: DispatchWorkItem
        let loader: BoundedLoader
        let task: URLSessionTask
    }

    private let lock = NSLock()
    private var pending: [Int: Pending] = [:]
    private var session: URLSession!

    private override init() {
        super.init()
        let configuration = URLSessionConfiguration.ephemeral
        // Each request carries its own (idle) timeout; a load's whole time is bounded by `load`.
        configuration.timeoutIntervalForRequest = 3600
        configuration.timeoutIntervalForResource = 7 * 24 * 3600
        // Held live sync requests each keep a connection: many clients of one process may wait on one server.
        configuration.httpMaximumConnectionsPerHost = 100_000
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        session = URLSession(configuration: configuration, delegate: self, delegateQueue: nil)
    }

    func load(_ request: URLRequest, limit: Int, for loader: BoundedLoader) async throws -> (HTTPURLResponse, Data) {
        let task = session.dataTask(with: request)
        let id = task.taskIdentifier
        let deadline = DispatchWorkItem { [weak self] in self?.end(id, with: URLError(.timedOut)) }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                lock.withLock {
                    pending[id] = Pending(
                        limit: limit, continuation: continuation, deadline: deadline, loader: loader, task: task)
                }
                if Task.isCancelled {
                    end(id, with: URLError(.cancelled))
                } else {
                    DispatchQueue.global().asyncAfter(
                        deadline: .now() + request.timeoutInterval * 4 + 60, execute: deadline)
                    task.resume()
                }
            }
        } onCancel: {
            end(id, with: URLError(.cancelled))
        }
    }

    func cancelAll(of loader: BoundedLoader) {
        let ids = lock.withLock { pending.filter { $0.value.loader === loader }.map(\.key) }
        for id in ids { end(id, with: URLError(.cancelled)) }
    }

    /// Fails the load of task `id` with `error`, if it is still waiting, and cancels the task.
    private func end(_ id: Int, with error: URLError) {
        guard let state = lock.withLock({ pending.removeValue(forKey: id) }) else { return }
        state.deadline.cancel()
        state.continuation.resume(throwing: BoundedLoader.Failure.transport(error))
        state.task.cancel()
    }

    func urlSession(
        _ session: URLSession,
        dataTask: URLSessionDataTask,
        didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        let allowed: Bool = lock.withLock {
            guard var state = pending[dataTask.taskIdentifier] else { return false }
            state.response = response as? HTTPURLResponse
            if response.expectedContentLength > Int64(state.limit) { state.failure = .tooLarge(limit: state.limit) }
            pending[dataTask.taskIdentifier] = state
            return state.failure == nil
        }
        completionHandler(allowed ? .allow : .cancel)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        // Mutated in place: copying `Pending` out would copy its body on every chunk.
        let (loader, overLimit): (BoundedLoader?, Bool) = lock.withLock {
            let id = dataTask.taskIdentifier
            guard let state = pending[id], state.failure == nil else { return (nil, false) }
            if state.data.count + data.count > state.limit {
                pending[id]!.failure = .tooLarge(limit: state.limit)
                pending[id]!.data = Data()
                return (state.loader, true)
            }
            pending[id]!.data.append(data)
            return (state.loader, false)
        }
        loader?.count(data.count)
        if overLimit { dataTask.cancel() }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let state = lock.withLock({ pending.removeValue(forKey: task.taskIdentifier) }) else { return }
        state.deadline.cancel()
        if let failure = state.failure {
            state.continuation.resume(throwing: failure)
        } else if let error {
            state.continuation.resume(
                throwing: BoundedLoader.Failure.transport(error as? URLError ?? URLError(.unknown)))
        } else if let response = state.response {
            state.continuation.resume(returning: (response, state.data))
        } else {
            state.continuation.resume(throwing: BoundedLoader.Failure.transport(URLError(.badServerResponse)))
        }
    }
}
