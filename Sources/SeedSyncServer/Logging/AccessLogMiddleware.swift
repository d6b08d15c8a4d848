import Hummingbird
import Logging
import SeedSyncModel

/// The outermost middleware: one `info` line per request once it is answered, such as
/// `POST /v1/sync 200` with the status and milliseconds as metadata, and the request counted and
/// timed in ``ServerMetrics`` by its route pattern (`/v1/snapshot/{type}`).
///
/// It logs the method, the path and the status, never headers or bodies, so a bearer token never
/// reaches a log. An error answer is logged and counted with the status it is sent with.
struct AccessLogMiddleware<Context: RequestContext>: RouterMiddleware {
    let metrics: ServerMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        let started = ContinuousClock.now
        do {
            let response = try await next(request, context)
            log(request, status: response.status, since: started, context: context)
            return response
        } catch let error as any HTTPResponseError {
            log(request, status: error.status, since: started, context: context)
            throw error
        }
    }

    private func log(
        _ request: Request, status: HTTPResponse.Status, since started: ContinuousClock.Instant, context: Context
    ) {
        let duration = ContinuousClock.now - started
        metrics.record(
            route: context.endpointPath ?? "unknown", method: request.method, status: status, duration: duration)
        let milliseconds = duration.seconds * 1000
        context.logger.info(
            "\(request.method) \(request.uri.path) \(status.code)",
            metadata: [
                "status": "\(status.code)",
                "ms": "\((milliseconds * 10).rounded() / 10)",
            ])
    }
}
