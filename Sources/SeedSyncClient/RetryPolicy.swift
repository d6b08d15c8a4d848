import Foundation

/// How a ``SyncClient`` retries: a bounded number of attempts with exponential backoff and jitter.
///
/// Only failures that may pass are retried: connection errors and timeouts, 5xx, and 429. A
/// `Retry-After` header (in seconds) replaces the computed delay, capped at ``maxDelay``.
///
/// ```swift
/// let policy = RetryPolicy(maxAttempts: 5, baseDelay: 0.2, maxDelay: 10)
/// policy.delay(afterAttempt: 3, retryAfter: nil) // about 0.4…0.8 s
/// ```
public struct RetryPolicy: Sendable {
    /// Attempts in all, the first included; 1 means no retry.
    public var maxAttempts: Int
    /// The delay before the second attempt, in seconds; it doubles for each attempt after.
    public var baseDelay: Double
    /// No delay is longer than this, in seconds, `Retry-After` included.
    public var maxDelay: Double

    public init(maxAttempts: Int = 5, baseDelay: Double = 0.2, maxDelay: Double = 10) {
        precondition(maxAttempts >= 1, "maxAttempts must be at least 1")
        self.maxAttempts = maxAttempts
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
    }

    /// No retries at all.
    public static let none = RetryPolicy(maxAttempts: 1)

    /// The seconds to wait after failed attempt `attempt` (1-based): the server's `Retry-After`
    /// when it sent one, else `baseDelay × 2^(attempt-1)` with jitter between half and all of it.
    public func delay(afterAttempt attempt: Int, retryAfter: Double?) -> Double {
        if let retryAfter { return min(max(retryAfter, 0), maxDelay) }
        let exponential = min(maxDelay, baseDelay * pow(2, Double(attempt - 1)))
        return exponential * Double.random(in: 0.5...1)
    }
}
