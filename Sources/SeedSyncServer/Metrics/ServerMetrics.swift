import CoreMetrics
import Hummingbird
import Metrics
import NIOConcurrencyHelpers
import Prometheus
import SeedSyncModel

/// What one server process has done, for `GET /metrics` in Prometheus text format.
///
/// Recorded through swift-metrics' types over a `PrometheusMetricsFactory` of this application's
/// own registry (never the process-wide `MetricsSystem`, so two applications in one process, as
/// in tests, count apart). The metrics, all prefixed `seedsync_`:
///
/// | name | type | labels |
/// |---|---|---|
/// | `http_requests_total` | counter | `route` (the route pattern, such as `/v1/snapshot/{type}`; `NotFound` when none matched), `method`, `status` |
/// | `http_request_duration_seconds` | histogram | `route`, `method` |
/// | `store_errors_total` | counter | `code`: `store_unavailable`, `schema_mismatch` |
/// | `pushes_total` | counter | `result`: `applied`, `conflict`, `rejected` (answers, replays included) |
/// | `store_up` | gauge | 1 when the scrape read the store's revisions, 0 when the store failed |
/// | `revision`, `min_revision` | gauge | read from the store at each scrape (the last read, when it fails) |
/// | `change_log_revisions` | gauge | the revisions a client can sync from: `revision - min_revision` |
/// | `waiting_requests` | gauge | live sync requests held at the scrape |
/// | `snapshot_pages_total` | counter | `source`: `kept` (answered from a page the server keeps), `read` (the request waited for a store read, its own or one shared with concurrent requests of the page) |
/// | `snapshot_kept_bytes` | gauge | the bytes of the snapshot pages kept at the scrape |
/// | `token_refusals_total` | counter | `reason`: why a presented token was refused with 401 (``TokenRefusal/Code``: `unknown_token`, `expired`, `signature`, …) |
final class ServerMetrics: Sendable {
    private let registry = PrometheusCollectorRegistry()
    private let factory: PrometheusMetricsFactory
    private let requests = NIOLockedValueBox<[RequestKey: CoreMetrics.Counter]>([:])
    private let durations = NIOLockedValueBox<[DurationKey: CoreMetrics.Timer]>([:])
    private let pushes: [String: CoreMetrics.Counter]
    private let storeErrors: [SyncStoreError.Code: CoreMetrics.Counter]
    private let snapshotPages: [PageCache.Source: CoreMetrics.Counter]
    private let tokenRefusals: [TokenRefusal.Code: CoreMetrics.Counter]

    /// Request latency buckets: from a cached sync answer (about a millisecond) to a slow snapshot.
    static let durationBuckets: [Duration] = [1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 10_000].map {
        .microseconds(Int64($0 * 1000))
    }

    init() {
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = Self.durationBuckets
        self.factory = factory
        // Created up front, so a scrape shows them at 0 before the first push or failure.
        pushes = Dictionary(
            uniqueKeysWithValues: ["applied", "conflict", "rejected"].map { result in
                (result, Counter(label: "seedsync_pushes_total", dimensions: [("result", result)], factory: factory))
            })
        storeErrors = Dictionary(
            uniqueKeysWithValues: [SyncStoreError.Code.storeUnavailable, .schemaMismatch].map { code in
                (
                    code,
                    Counter(
                        label: "seedsync_store_errors_total", dimensions: [("code", code.rawValue)], factory: factory)
                )
            })
        snapshotPages = Dictionary(
            uniqueKeysWithValues: [PageCache.Source.kept, .read].map { source in
                (
                    source,
                    Counter(
                        label: "seedsync_snapshot_pages_total", dimensions: [("source", source.rawValue)],
                        factory: factory)
                )
            })
        tokenRefusals = Dictionary(
            uniqueKeysWithValues: TokenRefusal.Code.all.map { code in
                (
                    code,
                    Counter(
                        label: "seedsync_token_refusals_total", dimensions: [("reason", code.rawValue)],
                        factory: factory)
                )
            })
    }

    /// Counts one answered request and its time.
    func record(route: String, method: HTTPRequest.Method, status: HTTPResponse.Status, duration: Duration) {
        let key = RequestKey(route: route, method: method, status: status.code)
        let counter = requests.withLockedValue { counters in
            if let counter = counters[key] { return counter }
            let counter = Counter(label: "seedsync_http_requests_total", dimensions: key.dimensions, factory: factory)
            counters[key] = counter
            return counter
        }
        counter.increment()
        let durationKey = DurationKey(route: route, method: method)
        let timer = durations.withLockedValue { timers in
            if let timer = timers[durationKey] { return timer }
            let timer = Timer(
                label: "seedsync_http_request_duration_seconds", dimensions: durationKey.dimensions, factory: factory)
            timers[durationKey] = timer
            return timer
        }
        timer.record(duration: duration)
    }

    /// Counts the answer to one pushed change set.
    func record(_ result: PushResult) {
        let name =
            switch result.status {
            case .applied: "applied"
            case .conflict: "conflict"
            case .rejected: "rejected"
            }
        pushes[name]?.increment()
    }

    /// Counts one snapshot page answered, by where it came from.
    func record(_ source: PageCache.Source) {
        snapshotPages[source]?.increment()
    }

    /// Counts a token refused with 401, by why.
    func record(_ refusal: TokenRefusal) {
        tokenRefusals[refusal.code]?.increment()
    }

    /// Counts a failure of the store's database (unreachable, or tables that no longer fit).
    func record(_ error: SyncStoreError) {
        storeErrors[error.code]?.increment()
    }

    /// Records how many live sync requests are held and how many bytes of snapshot pages are
    /// kept, for the next scrape.
    func recordHeld(waiting: Int, keptPageBytes: Int) {
        gauge("seedsync_waiting_requests").record(waiting)
        gauge("seedsync_snapshot_kept_bytes").record(keptPageBytes)
    }

    /// The metrics in Prometheus text format, with the store's revisions as read for this scrape
    /// (`nil`: the store failed; `store_up` is 0 and the revision gauges keep their last values).
    func exposition(_ revisions: (revision: Int64, minRevision: Int64)?) -> [UInt8] {
        gauge("seedsync_store_up").record(revisions == nil ? 0 : 1)
        if let (revision, minRevision) = revisions {
            gauge("seedsync_revision").record(revision)
            gauge("seedsync_min_revision").record(minRevision)
            gauge("seedsync_change_log_revisions").record(revision - minRevision)
        }
        return registry.emitToBuffer()
    }

    private func gauge(_ label: String, _ dimensions: [(String, String)] = []) -> CoreMetrics.Gauge {
        Gauge(label: label, dimensions: dimensions, factory: factory)
    }

    private struct RequestKey: Hashable {
        let route: String
        let method: HTTPRequest.Method
        let status: Int

        var dimensions: [(String, String)] { [("route", route), ("method", method.rawValue), ("status", "\(status)")] }
    }

    private struct DurationKey: Hashable {
        let route: String
        let method: HTTPRequest.Method

        var dimensions: [(String, String)] { [("route", route), ("method", method.rawValue)] }
    }
}
