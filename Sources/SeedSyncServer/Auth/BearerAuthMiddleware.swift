import Foundation
import Hummingbird

/// Lets a request through only with `Authorization: Bearer <token>` of at least the required role:
/// 401 without a known token, 403 with a read token on an admin route. The handler finds the
/// token's role in ``role`` (admin when the server runs without tokens).
struct BearerAuthMiddleware<Context: RequestContext>: RouterMiddleware {
    let tokens: TokenSet?
    let required: TokenSet.Role

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        guard let tokens else {
            return try await RequestRole.$current.withValue(.admin) { try await next(request, context) }
        }
        guard let token = Self.bearerToken(request), let role = tokens.role(of: token) else {
            throw ServerError.unauthorized
        }
        guard role >= required else { throw ServerError.forbidden }
        return try await RequestRole.$current.withValue(role) { try await next(request, context) }
    }

    private static func bearerToken(_ request: Request) -> String? {
        guard let value = request.headers[.authorization] else { return nil }
        let parts = value.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let token = parts[1].trimmingCharacters(in: .whitespaces)
        return token.isEmpty ? nil : token
    }
}

/// The role of the token the current request came with.
enum RequestRole {
    /// `read` outside the middleware: a route it does not guard may not write.
    @TaskLocal static var current: TokenSet.Role = .read
}
