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
        /// A streamed load's ``ResponseSink`` threw: the error it threw.
        case sink(any Error)
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

    /// Streams the response's body into `sink` as it arrives, without holding it: `sink` is told
    /// the response before any byte of its body, then handed each chunk in order.
    ///
    /// The load fails with ``Failure/tooLarge(limit:)`` past `limit` body bytes (a declared
    /// `Content-Length` over it before any is read), and with `URLError.timedOut` when no byte
    /// arrives for `stallTimeout` seconds (noticed within twice that): a slow download goes on as
    /// long as it moves, a stalled one ends. A ``Failure/sink(_:)`` ends it when the sink throws.
    package func stream(
        _ request: URLRequest, limit: Int64, stallTimeout: Double, into sink: any ResponseSink
    ) async throws -> HTTPURLResponse {
        try await SharedSession.shared.stream(
            request, limit: Int(clamping: limit), stallTimeout: stallTimeout, into: sink, for: self)
    }

    /// Cancels the loads still going on (the client is gone).
    func cancelAll() {
        SharedSession.shared.cancelAll(of: self)
    }

    fileprivate func count(_ bytes: Int) {
        lock.withLock { received += Int64(bytes) }
    }
}

/// Where ``BoundedLoader/stream(_:limit:stallTimeout:into:)`` puts an answer: called on the
/// session's delegate queue, one call at a time, in order.
package protocol ResponseSink: AnyObject, Sendable {
    /// The response, before any byte of its body; throwing ends the load.
    func begin(_ response: HTTPURLResponse) throws
    /// The next chunk of the body; throwing ends the load.
    func write(_ data: Data) throws
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
        /// What ends the load when it takes too long: a deadline, or a streamed load's watchdog.
        var deadline: DispatchWorkItem
        let loader: BoundedLoader
        /// A streamed load's sink, which takes the body instead of ``data``.
        var sink: (any ResponseSink)?
        /// A streamed load's body bytes so far.
        var streamed = 0
        /// Whether a streamed load received bytes since its watchdog last looked.
        var moved = false
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
        try await run(request, limit: limit, sink: nil, for: loader) { number in
            let deadline = DispatchWorkItem { [weak self] in self?.end(number, with: URLError(.timedOut)) }
            DispatchQueue.global().asyncAfter(deadline: .now() + request.timeoutInterval * 4 + 60, execute: deadline)
            return deadline
        }
    }

    func stream(
        _ request: URLRequest, limit: Int, stallTimeout: Double, into sink: any ResponseSink, for loader: BoundedLoader
    ) async throws -> HTTPURLResponse {
        try await run(request, limit: limit, sink: sink, for: loader) { number in
            self.watch(number, every: stallTimeout)
        }.0
    }

    /// Starts load `number` and waits for its end, which `deadline` (armed once the load is
    /// registered) may bring about.
    private func run(
        _ request: URLRequest, limit: Int, sink: (any ResponseSink)?, for loader: BoundedLoader,
        deadline: @escaping (Int) -> DispatchWorkItem
    ) async throws -> (HTTPURLResponse, Data) {
        let number = lock.withLock {
            lastLoad += 1
            return lastLoad
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                lock.withLock {
                    pending[number] = Pending(
                        limit: limit, continuation: continuation, deadline: DispatchWorkItem {}, loader: loader,
                        sink: sink)
                }
                if Task.isCancelled { return end(number, with: URLError(.cancelled)) }
                arm(deadline(number), for: number)
                calls.async { self.start(number, request) }
            }
        } onCancel: {
            end(number, with: URLError(.cancelled))
        }
    }

    /// Makes `item` what ends load `number` when it takes too long; cancels it when the load has
    /// ended already.
    private func arm(_ item: DispatchWorkItem, for number: Int) {
        let registered = lock.withLock {
            guard pending[number] != nil else { return false }
            pending[number]!.deadline = item
            return true
        }
        if !registered { item.cancel() }
    }

    /// A watchdog that ends load `number` with `URLError.timedOut` when a look every `seconds`
    /// finds that no byte came since the last: a stall is noticed within twice `seconds`.
    private func watch(_ number: Int, every seconds: Double) -> DispatchWorkItem {
        let check = DispatchWorkItem { [weak self] in
            guard let self else { return }
            let moved: Bool? = lock.withLock {
                guard let state = pending[number] else { return nil }
                pending[number]!.moved = false
                return state.moved
            }
            switch moved {
            case true?: arm(watch(number, every: seconds), for: number)
            case false?: end(number, with: URLError(.timedOut))
            case nil: return
            }
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds, execute: check)
        return check
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
        let (known, sink): (Bool, (any ResponseSink)?) = lock.withLock {
            guard let number = loads[dataTask.taskIdentifier], pending[number] != nil else { return (false, nil) }
            pending[number]!.response = response as? HTTPURLResponse
            return (true, pending[number]!.sink)
        }
        guard known else { return completionHandler(.cancel) }
        // The sink sees the head first: what it refuses there (a status, a coding) is refused for
        // that, whatever length the head declares.
        if let sink, let response = response as? HTTPURLResponse {
            do {
                try sink.begin(response)
            } catch {
                fail(dataTask, .sink(error))
                return completionHandler(.cancel)
            }
        }
        let allowed = lock.withLock {
            guard let number = loads[dataTask.taskIdentifier], let limit = pending[number]?.limit else { return false }
            if response.expectedContentLength > Int64(limit) {
                pending[number]!.failure = .tooLarge(limit: limit)
            } else if response.expectedContentLength > 0, pending[number]!.sink == nil {
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
        let (loader, overLimit, sink): (BoundedLoader?, Bool, (any ResponseSink)?) = lock.withLock {
            guard let number = loads[dataTask.taskIdentifier], let loader = pending[number]?.loader,
                pending[number]?.failure == nil, let limit = pending[number]?.limit,
                let received = pending[number].map({ $0.sink == nil ? $0.data.count : $0.streamed })
            else { return (nil, false, nil) }
            if received + data.count > limit {
                pending[number]!.failure = .tooLarge(limit: limit)
                pending[number]!.data = Data()
                return (loader, true, nil)
            }
            if let sink = pending[number]!.sink {
                pending[number]!.streamed += data.count
                pending[number]!.moved = true
                return (loader, false, sink)
            }
            pending[number]!.data.append(data)
            return (loader, false, nil)
        }
        loader?.count(data.count)
        if overLimit { return dataTask.cancel() }
        do {
            try sink?.write(data)
        } catch {
            fail(dataTask, .sink(error))
        }
    }

    /// Records `failure` as the end of `task`'s load, and cancels the task.
    private func fail(_ task: URLSessionTask, _ failure: BoundedLoader.Failure) {
        lock.withLock {
            guard let number = loads[task.taskIdentifier], pending[number]?.failure == nil else { return }
            pending[number]!.failure = failure
        }
        task.cancel()
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
