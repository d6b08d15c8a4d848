import Foundation
import SeedSyncClient

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The HTTP requests a test sends itself (metrics, raw `POST`s), through the client's own bounded
/// loader (`BoundedLoader`), never `URLSession.shared.data(for:)`.
///
/// `URLSession.shared.data(for:)` has no bound but the session's idle timeout, and on Linux its
/// answer was seen lost once under the whole suite's load: the test that waited for it never
/// ended, and the run hung until the watchdog stopped it. The loader creates its tasks off the
/// cooperative pool and ends a load when its caller is cancelled, and at the latest 4 × the
/// request's timeout + 60 s after it began.
///
/// ```swift
/// let (data, response) = try await TestHTTP.data(for: URLRequest(url: url.appendingPathComponent("metrics")))
/// ```
public enum TestHTTP {
    /// The body and response of `request` (at most 256 MiB of body).
    ///
    /// - Throws: the transport's `URLError`: `.timedOut` past the loader's deadline, `.cancelled`
    ///   when the caller was cancelled.
    public static func data(for request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        do {
            let (response, data) = try await BoundedLoader().load(request, limit: 256 << 20)
            return (data, response)
        } catch BoundedLoader.Failure.transport(let error) {
            throw error
        }
    }
}
