import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The HTTP requests a test sends itself (metrics, raw `POST`s), each with a deadline that ends it.
///
/// `URLSession.shared.data(for:)` has none but the session's idle timeout, and on Linux its
/// answer was seen lost once under the whole suite's load: the test that waited for it never
/// ended, and the run hung until the watchdog stopped it. Here the task is created and resumed on
/// a queue of its own (on Linux both wait for the session's queue, which must not hold one of the
/// cooperative pool's threads), and the answer comes from whichever ends first: the task, the
/// deadline (twice the request's timeout), or the caller's cancellation.
///
/// ```swift
/// let (data, response) = try await TestHTTP.data(for: URLRequest(url: url.appendingPathComponent("metrics")))
/// ```
public enum TestHTTP {
    private static let calls = DispatchQueue(label: "SeedSyncTesting.TestHTTP")

    /// The body and response of `request`.
    ///
    /// - Throws: the transport's error; `URLError(.timedOut)` when no answer came within twice
    ///   `request.timeoutInterval`; `URLError(.cancelled)` when the caller was cancelled.
    public static func data(for request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        let answer = Answer()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                answer.wait(continuation)
                calls.async {
                    let task = URLSession.shared.dataTask(with: request) { data, response, error in
                        if let response = response as? HTTPURLResponse, error == nil {
                            answer.settle(.success((data ?? Data(), response)))
                        } else {
                            answer.settle(.failure(error ?? URLError(.badServerResponse)))
                        }
                    }
                    answer.started(task)
                    task.resume()
                }
                DispatchQueue.global().asyncAfter(deadline: .now() + request.timeoutInterval * 2) {
                    answer.settle(.failure(URLError(.timedOut)))
                }
            }
        } onCancel: {
            answer.settle(.failure(URLError(.cancelled)))
        }
    }

    /// The one answer of a request: the first of its outcomes resumes the caller, the later ones
    /// are dropped; a task still running then is cancelled.
    private final class Answer: @unchecked Sendable {
        private let lock = NSLock()
        private var continuation: CheckedContinuation<(Data, HTTPURLResponse), any Error>?
        private var early: Result<(Data, HTTPURLResponse), any Error>?
        private var settled = false
        private var runningTask: URLSessionDataTask?

        /// Keeps `task` to cancel it when another outcome comes first; cancels it at once when one came.
        func started(_ task: URLSessionDataTask) {
            let cancel = lock.withLock {
                runningTask = task
                return settled
            }
            if cancel { task.cancel() }
        }

        func wait(_ continuation: CheckedContinuation<(Data, HTTPURLResponse), any Error>) {
            let result: Result<(Data, HTTPURLResponse), any Error>? = lock.withLock {
                self.continuation = continuation
                return early
            }
            if let result { continuation.resume(with: result) }
        }

        func settle(_ result: Result<(Data, HTTPURLResponse), any Error>) {
            let (waiting, task): (CheckedContinuation<(Data, HTTPURLResponse), any Error>?, URLSessionDataTask?) =
                lock.withLock {
                    guard !settled else { return (nil, nil) }
                    settled = true
                    guard let continuation else {
                        early = result
                        return (nil, runningTask)
                    }
                    self.continuation = nil
                    return (continuation, runningTask)
                }
            waiting?.resume(with: result)
            if case .failure = result { task?.cancel() }
        }
    }
}
