import Foundation
import Hummingbird

/// Lets a request through only with `Authorization: Bearer <token>` that the server's
/// ``Authenticator`` grants at least the required role: 401 without a token it accepts (saying
/// why, for a JWT), 403 with a read token on an admin route. The handler finds the grant in
/// ``RequestGrant/current`` (admin when the server runs without tokens).
struct BearerAuthMiddleware<Context: RequestContext>: RouterMiddleware {
    let authenticator: Authenticator?
    let required: TokenSet.Role
    /// Where refusals are counted, by reason.
    let metrics: ServerMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        guard let authenticator else {
            return try await RequestGrant.$current.withValue(Grant(role: .admin)) { try await next(request, context) }
        }
        guard let token = Self.bearerToken(request) else { throw ServerError.unauthorized }
        let grant: Grant
        do {
            grant = try await authenticator.grant(for: token)
        } catch {
            metrics.record(error)
            throw ServerError.unauthorized(error)
        }
        guard grant.role >= required else { throw ServerError.forbidden }
        return try await RequestGrant.$current.withValue(grant) { try await next(request, context) }
    }

    private static func bearerToken(_ request: Request) -> String? {
        guard let value = request.headers[.authorization] else { return nil }
        let parts = value.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let token = parts[1].trimmingCharacters(in: .whitespaces)
        return token.isEmpty ? nil : token
    }
}
