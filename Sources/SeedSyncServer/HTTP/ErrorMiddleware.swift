import Hummingbird
import Logging
import NIOCore
import SeedSyncModel

/// The middleware next to the outermost: turns every error into a protocol v1 error answer.
///
/// Store errors and Hummingbird's own errors (unknown route, body too large) get their status and
/// JSON body; an error nobody expected is logged and answered with a bare 500, its text never sent.
struct ErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    let metrics: ServerMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        do {
            return try await next(request, context)
        } catch let error as ServerError {
            throw error
        } catch let error as SyncStoreError {
            if error.code == .storeUnavailable || error.code == .schemaMismatch {
                // The operator must hear of these: the client only sees a 503 and retries.
                metrics.record(error)
                context.logger.error(
                    "store failed",
                    metadata: ["code": "\(error.code)", "error": "\(error.description)", "path": "\(request.uri.path)"])
            }
            throw ServerError(error)
        } catch let error as HTTPError {
            throw ServerError(error)
        } catch is NIOTooManyBytesError {
            throw ServerError(HTTPError(.contentTooLarge))
        } catch {
            context.logger.error(
                "request failed", metadata: ["error": "\(String(reflecting: error))", "path": "\(request.uri.path)"])
            return Response(status: .internalServerError)
        }
    }
}
