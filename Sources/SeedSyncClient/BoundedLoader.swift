import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Loads HTTP responses through one `URLSession`, refusing bodies over a size limit as they arrive
/// (a declared `Content-Length` over the limit is refused before any body is read).
///
/// The limit counts the bytes the session delivers, that is after gzip decompression, so a small
/// compressed answer cannot expand past it.
final class BoundedLoader: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    /// A load that ended without a complete answer.
    enum Failure: Error {
        case tooLarge(limit: Int)
        case transport(URLError)
    }

    private struct Pending {
        var data = Data()
        let limit: Int
        var response: HTTPURLResponse?
        var failure: Failure?
        let continuation: CheckedContinuation<(HTTPURLResponse, Data), any Error>
        let deadline: DispatchWorkItem
    }

    private let lock = NSLock()
    private var pending: [Int: Pending] = [:]
    private var session: URLSession!
    private var received: Int64 = 0

    /// Body bytes delivered so far over all requests, after decompression.
    var bytesReceived: Int64 { lock.withLock { received } }

    init(timeout: TimeInterval) {
        super.init()
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeout
        // Room for a live sync request the server holds (at most a minute) besides the transfer.
        configuration.timeoutIntervalForResource = timeout * 4 + 60
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        session = URLSession(configuration: configuration, delegate: self, delegateQueue: nil)
    }

    /// Ends the session, which otherwise keeps this delegate alive (a session retains its delegate).
    func invalidate() {
        session.invalidateAndCancel()
    }

    /// The response and its whole body, or a ``Failure``.
    ///
    /// The load ends whatever the transport does: when the calling task is cancelled (even before
    /// the request started), and at the latest 4 × the request's timeout + 60 s after it began
    /// (`URLError.timedOut`), besides the session's own timeouts.
    func load(_ request: URLRequest, limit: Int) async throws -> (HTTPURLResponse, Data) {
        let task = session.dataTask(with: request)
        let id = task.taskIdentifier
        let deadline = DispatchWorkItem { [weak self] in self?.end(task, with: URLError(.timedOut)) }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                lock.withLock {
                    pending[id] = Pending(limit: limit, continuation: continuation, deadline: deadline)
                }
                if Task.isCancelled {
                    end(task, with: URLError(.cancelled))
                } else {
                    DispatchQueue.global().asyncAfter(
                        deadline: .now() + request.timeoutInterval * 4 + 60, execute: deadline)
                    task.resume()
                }
            }
        } onCancel: {
            end(task, with: URLError(.cancelled))
        }
    }

    /// Fails the load of `task` with `error`, if it is still waiting, and cancels the task.
    private func end(_ task: URLSessionTask, with error: URLError) {
        let state = lock.withLock { pending.removeValue(forKey: task.taskIdentifier) }
        state?.deadline.cancel()
        state?.continuation.resume(throwing: Failure.transport(error))
        task.cancel()
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
        let overLimit: Bool = lock.withLock {
            let id = dataTask.taskIdentifier
            guard let state = pending[id], state.failure == nil else { return false }
            received += Int64(data.count)
            if state.data.count + data.count > state.limit {
                pending[id]!.failure = .tooLarge(limit: state.limit)
                pending[id]!.data = Data()
                return true
            }
            pending[id]!.data.append(data)
            return false
        }
        if overLimit { dataTask.cancel() }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let state = lock.withLock({ pending.removeValue(forKey: task.taskIdentifier) }) else { return }
        state.deadline.cancel()
        if let failure = state.failure {
            state.continuation.resume(throwing: failure)
        } else if let error {
            state.continuation.resume(throwing: Failure.transport(error as? URLError ?? URLError(.unknown)))
        } else if let response = state.response {
            state.continuation.resume(returning: (response, state.data))
        } else {
            state.continuation.resume(throwing: Failure.transport(URLError(.badServerResponse)))
        }
    }
}
