package import Foundation

#if canImport(FoundationNetworking)
package import FoundationNetworking
#endif

/// Loads HTTP responses for one ``SyncClient``, refusing bodies over a size limit as they arrive
/// (a declared `Content-Length` over the limit is refused before any body is read), and counts
/// the body bytes it received.
///
/// The limit counts the bytes the session delivers, that is after gzip decompression, so a small
/// compressed answer cannot expand past it. Every loader of the process shares one `URLSession`
/// (``SharedSession``): a session per client kept file descriptors open after the client was gone
/// (about four each on Linux), which an app that syncs for days, or a test suite, ran out of.
package final class BoundedLoader: @unchecked Sendable {
    /// A load that ended without a complete answer.
    package enum Failure: Error {
        case tooLarge(limit: Int)
        case transport(URLError)
    }

    private let lock = NSLock()
    private var received: Int64 = 0

    package init() {}

    /// Body bytes delivered so far over all requests, after decompression.
    var bytesReceived: Int64 { lock.withLock { received } }

    /// The response and its whole body, or a ``Failure``.
    ///
    /// The load ends whatever the transport does: when the calling task is cancelled (even before
    /// the request started), and at the latest 4 × the request's timeout + 60 s after it began
    /// (`URLError.timedOut`), besides the request's own idle timeout.
    package func load(_ request: URLRequest, limit: Int) async throws -> (HTTPURLResponse, Data) {
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
/// that started it.
///
/// No `URLSession` method is called on the caller's thread. On Linux, `dataTask(with:)`,
/// `resume()` and `cancel()` wait (`DispatchQueue.sync`) for the session's work queue; a task of
/// Swift's cooperative pool waiting there holds one of its few threads (two on a small machine),
/// and the test suite stalled for tens of seconds when they all waited. Those calls run on
/// ``calls``, a serial queue of this session's own, and a load waits for its answer without
/// holding a thread.
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
        /// The session's task, once ``calls`` has created it.
        var task: URLSessionTask?
    }

    private let lock = NSLock()
    /// The loads waiting for their answer, by load number.
    private var pending: [Int: Pending] = [:]
    /// The load number of each running task, by task identifier.
    private var loads: [Int: Int] = [:]
    private var lastLoad = 0
    private let calls = DispatchQueue(label: "SeedSyncClient.SharedSession.calls")
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
        // Answers are data to apply, never to reuse: no cache, no cookies, no stored credentials.
        configuration.urlCache = nil
        configuration.httpCookieStorage = nil
        configuration.urlCredentialStorage = nil
        session = URLSession(configuration: configuration, delegate: self, delegateQueue: nil)
    }

    func load(_ request: URLRequest, limit: Int, for loader: BoundedLoader) async throws -> (HTTPURLResponse, Data) {
        let number = lock.withLock {
            lastLoad += 1
            return lastLoad
        }
        let deadline = DispatchWorkItem { [weak self] in self?.end(number, with: URLError(.timedOut)) }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                lock.withLock {
                    pending[number] = Pending(
                        limit: limit, continuation: continuation, deadline: deadline, loader: loader)
                }
                if Task.isCancelled { return end(number, with: URLError(.cancelled)) }
                DispatchQueue.global().asyncAfter(
                    deadline: .now() + request.timeoutInterval * 4 + 60, execute: deadline)
                calls.async { self.start(number, request) }
            }
        } onCancel: {
            end(number, with: URLError(.cancelled))
        }
    }

    /// Creates and resumes the task of load `number`, unless the load has ended already (on ``calls``).
    private func start(_ number: Int, _ request: URLRequest) {
        guard lock.withLock({ pending[number] != nil }) else { return }
        let task = session.dataTask(with: request)
        let started: Bool = lock.withLock {
            guard pending[number] != nil else { return false }
            pending[number]!.task = task
            loads[task.taskIdentifier] = number
            return true
        }
        if started { task.resume() }
    }

    func cancelAll(of loader: BoundedLoader) {
        let numbers = lock.withLock { pending.filter { $0.value.loader === loader }.map(\.key) }
        for number in numbers { end(number, with: URLError(.cancelled)) }
    }

    /// Fails load `number` with `error`, if it is still waiting, and cancels its task.
    private func end(_ number: Int, with error: URLError) {
        guard let state = lock.withLock({ removeLoad(number) }) else { return }
        state.deadline.cancel()
        state.continuation.resume(throwing: BoundedLoader.Failure.transport(error))
        if let task = state.task { calls.async { task.cancel() } }
    }

    /// Takes load `number` out of the tables (under ``lock``).
    private func removeLoad(_ number: Int) -> Pending? {
        guard let state = pending.removeValue(forKey: number) else { return nil }
        if let task = state.task { loads[task.taskIdentifier] = nil }
        return state
    }

    func urlSession(
        _ session: URLSession,
        dataTask: URLSessionDataTask,
        didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        let allowed: Bool = lock.withLock {
            guard let number = loads[dataTask.taskIdentifier], let limit = pending[number]?.limit else { return false }
            pending[number]!.response = response as? HTTPURLResponse
            if response.expectedContentLength > Int64(limit) {
                pending[number]!.failure = .tooLarge(limit: limit)
            } else if response.expectedContentLength > 0 {
                // One allocation for the body instead of one per doubling, each copying what came.
                pending[number]!.data.reserveCapacity(Int(response.expectedContentLength))
            }
            return pending[number]!.failure == nil
        }
        completionHandler(allowed ? .allow : .cancel)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        // Mutated in place, with no copy of `Pending` alive: a copy would share the body, and
        // appending to a shared body copies all of it, on every chunk.
        let (loader, overLimit): (BoundedLoader?, Bool) = lock.withLock {
            guard let number = loads[dataTask.taskIdentifier], let loader = pending[number]?.loader,
                pending[number]?.failure == nil, let limit = pending[number]?.limit,
                let received = pending[number]?.data.count
            else { return (nil, false) }
            if received + data.count > limit {
                pending[number]!.failure = .tooLarge(limit: limit)
                pending[number]!.data = Data()
                return (loader, true)
            }
            pending[number]!.data.append(data)
            return (loader, false)
        }
        loader?.count(data.count)
        if overLimit { dataTask.cancel() }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard
            let state = lock.withLock({ loads[task.taskIdentifier].flatMap { removeLoad($0) } })
        else { return }
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
