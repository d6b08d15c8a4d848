import Foundation
import SeedSyncModel

/// Where a client's bearer token comes from: a fixed token, or a function the client asks again
/// when the server refuses the token it has.
///
/// Apps that sign in with an identity provider hold short-lived tokens (minutes) and refresh them.
/// A ``SyncClient`` asks its provider once for the token of its first request and keeps it. When
/// the server answers 401, the client asks again with `renew: true`, and sends the same request
/// once more with the new token; a second 401, or the same token again, is reported
/// (``SyncClientError/Code/unauthorized``). A long catch-up or a held live request thus outlives a
/// token's expiry without losing its place.
///
/// ```swift
/// let tokens = TokenProvider { renew in
///     try await session.accessToken(forceRefresh: renew)
/// }
/// let client = SyncClient(configuration: .init(serverURL: url, tokens: tokens))
/// ```
public struct TokenProvider: Sendable {
    private let provide: @Sendable (_ renew: Bool) async throws -> String?

    /// A provider asking `provide`: with `renew` false for a first token (one it has is fine),
    /// with `renew` true after the server refused the last one (a new one is needed). `nil` sends
    /// requests without a token.
    public init(_ provide: @escaping @Sendable (_ renew: Bool) async throws -> String?) {
        self.provide = provide
    }

    /// Always `token`: a static token, which asking again does not change.
    public static func fixed(_ token: String?) -> TokenProvider {
        TokenProvider { _ in token }
    }

    /// The token a file holds, read at every ask (surrounding whitespace removed), so a token that
    /// another program renews in place (a sidecar, a mounted secret) is taken up at the next 401.
    public static func file(_ path: String) -> TokenProvider {
        TokenProvider { _ in
            guard let data = FileManager.default.contents(atPath: path) else {
                throw TokenFileUnreadable(path: path)
            }
            let token = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            return token.isEmpty ? nil : token
        }
    }

    /// Asks the provider once: `renew` after the server refused the last token.
    package func token(renew: Bool) async throws -> String? {
        try await provide(renew)
    }

    private struct TokenFileUnreadable: Error, CustomStringConvertible {
        let path: String
        var description: String { "cannot read the token file \(path)" }
    }
}

/// The token one client sends, asked of its ``TokenProvider`` once and again after each refusal.
/// Requests refused at the same time ask once: a request whose refused token was already replaced
/// takes the replacement.
final class TokenHolder: Sendable {
    private let provider: TokenProvider
    /// The token last given; `nil` before the first ask (the token itself may be `nil`: anonymous).
    private let current = LockedValue<String??>(nil)

    init(_ provider: TokenProvider) { self.provider = provider }

    /// The token to send.
    func token() async throws -> String? {
        if let token = current.get() { return token }
        let token = try await provider.token(renew: false)
        current.set(.some(token))
        return token
    }

    /// A token to send instead of `refused`, or `nil` when the provider has none other.
    func renew(refused: String?) async throws -> String?? {
        if let token = current.get(), token != refused { return .some(token) }
        let token = try await provider.token(renew: true)
        current.set(.some(token))
        return token == refused ? nil : .some(token)
    }
}
