public import Foundation

/// How a server accepts JWTs from an app's identity provider (Supabase, Auth0, Firebase, a team's
/// own), beside its static tokens.
///
/// A JWT is accepted when it is signed by one of the configured keys with the algorithm that key
/// is for, is within its `exp` and `nbf` (give or take ``leeway``), and names the configured
/// ``issuer`` and ``audience`` when they are set. It grants ``role``, or the role its ``roleClaim``
/// holds; never `admin`, which stays with static tokens.
///
/// ```swift
/// var jwt = JWTConfiguration(keys: .keySetURL(URL(string: "https://example.eu.auth0.com/.well-known/jwks.json")!))
/// jwt.issuer = "https://example.eu.auth0.com/"
/// jwt.audience = "https://sync.example.com"
/// jwt.roleClaim = "app_metadata.seedsync_role"
/// let configuration = ServerConfiguration(tokens: tokens, jwt: jwt)
/// ```
public struct JWTConfiguration: Sendable {
    /// Where the keys come from.
    public enum Keys: Sendable {
        /// One shared secret of at least 32 bytes, for HS256: for development, and for a backend that
        /// mints its apps' tokens itself. A token's `kid` is not needed.
        case secret(String)
        /// A JSON Web Key Set file (`{"keys": [...]}`), read again every ``refreshInterval``.
        case keySetFile(String)
        /// A JSON Web Key Set at a URL (an identity provider's `jwks_uri`), read again every
        /// ``refreshInterval``, and at once (at most every ``minimumRefetchInterval``) when a token
        /// names a key the set does not hold, so a rotated key is taken up without a restart.
        case keySetURL(URL)
    }

    public var keys: Keys
    /// The `iss` a token must carry; `nil` accepts any.
    public var issuer: String?
    /// A value the token's `aud` must hold (a string, or one of an array); `nil` accepts any.
    public var audience: String?
    /// The role every accepted JWT has when ``roleClaim`` is `nil`: `read` unless set to `write`
    /// (`admin` is taken as `write`).
    public var role: TokenSet.Role
    /// The claim that holds a token's role, `read` or `write` (a string, or an array holding one of
    /// them): a member name, or a path through objects such as `app_metadata.seedsync_role`. A
    /// token without it is refused. `nil` gives every token ``role``.
    public var roleClaim: String?
    /// The claim that holds the scope values a token grants (an array of them, or one value): a
    /// member name or a path such as `app_metadata.teams`, found as ``roleClaim`` is. Required
    /// when the dataset declares a scope (a token without the claim is refused then); ignored
    /// for a dataset without one. Static tokens grant every scope value.
    public var scopeClaim: String?
    /// How far a token's `exp` and `nbf` may be passed or not yet reached, for clocks that differ:
    /// 30 seconds.
    public var leeway: Duration
    /// How often keys are read again from their file or URL: 5 minutes.
    public var refreshInterval: Duration
    /// The least time between two reads of the keys that a token with an unknown `kid` sets off:
    /// 10 seconds, so a stream of forged key ids cannot make the server hammer its identity provider.
    public var minimumRefetchInterval: Duration

    public init(
        keys: Keys, issuer: String? = nil, audience: String? = nil, role: TokenSet.Role = .read,
        roleClaim: String? = nil, scopeClaim: String? = nil, leeway: Duration = .seconds(30),
        refreshInterval: Duration = .seconds(300), minimumRefetchInterval: Duration = .seconds(10)
    ) {
        self.keys = keys
        self.issuer = issuer
        self.audience = audience
        self.role = role
        self.roleClaim = roleClaim
        self.scopeClaim = scopeClaim
        self.leeway = leeway
        self.refreshInterval = refreshInterval
        self.minimumRefetchInterval = minimumRefetchInterval
    }
}

/// Keys for JWTs that cannot be used: the server does not start with them.
public struct KeySetError: Error, CustomStringConvertible, Sendable {
    /// What went wrong. New codes may be added: a `switch` over it needs a `default`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case unreadable
            case malformed
            case weakSecret
            case noScopeClaim
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The key set file or URL cannot be read.
        public static let unreadable = Code(.unreadable)
        /// What was read is not a JSON Web Key Set with a signing key the server can use.
        public static let malformed = Code(.malformed)
        /// The HS256 secret is shorter than 32 bytes.
        public static let weakSecret = Code(.weakSecret)
        /// The dataset declares a scope, but no ``JWTConfiguration/scopeClaim`` says which claim
        /// holds a token's scope values.
        public static let noScopeClaim = Code(.noScopeClaim)

        public var description: String { base.rawValue }
    }

    public let code: Code
    /// Where the keys came from: a path, a URL, or `the JWT secret`.
    public let source: String
    /// What is wrong, and what to do.
    public let reason: String

    public var description: String { "\(source): \(reason)" }

    init(_ code: Code, source: String, _ reason: String) {
        self.code = code
        self.source = source
        self.reason = reason
    }
}
