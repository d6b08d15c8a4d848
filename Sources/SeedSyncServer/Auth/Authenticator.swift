import Crypto
import Foundation
import Logging

/// Decides what a bearer token grants: a static token of the ``TokenSet`` its role over
/// everything, else, when the server takes them, a JWT what ``JWTVerifier`` finds in it.
///
/// ```swift
/// let authenticator = try await Authenticator(tokens: tokens, jwt: jwt, logger: logger)
/// let grant = try await authenticator.grant(for: token)  // throws TokenRefusal
/// ```
struct Authenticator: Sendable {
    let tokens: TokenSet
    let jwt: JWTVerifier?

    /// Reads the JWT keys, when JWTs are configured.
    ///
    /// - Throws: ``KeySetError`` when the keys cannot be read or used.
    init(tokens: TokenSet, jwt: JWTConfiguration?, logger: Logger) async throws {
        self.tokens = tokens
        if let jwt {
            self.jwt = JWTVerifier(configuration: jwt, keys: try await KeySet(configuration: jwt, logger: logger))
        } else {
            self.jwt = nil
        }
    }

    func grant(for token: String) async throws(TokenRefusal) -> Grant {
        let digest = TokenSet.digest(token)
        if let role = tokens.role(ofDigest: digest) { return Grant(role: role) }
        guard let jwt else { throw TokenRefusal(.unknownToken, "a valid bearer token is required") }
        return try await jwt.grant(for: token, digest: Data(digest))
    }
}
