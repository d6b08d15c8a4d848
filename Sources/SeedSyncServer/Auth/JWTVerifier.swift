import Foundation
package import JWTKit
import NIOConcurrencyHelpers
package import SeedSyncModel

/// Verifies JWTs against ``JWTConfiguration`` and answers what each grants.
///
/// The checks, in order, each refusing with its own ``TokenRefusal/Code``: three base64url parts
/// whose header names no critical extension; an `alg` the server takes that is the algorithm of
/// the key named by `kid` (a key set) or of the secret; the signature (JWTKit); `exp` (required)
/// and `nbf` give or take the leeway; `iss` and `aud` when configured; the role. A grant is kept
/// per token (by its SHA-256) until the token expires or the keys change, so a request with a
/// token seen before costs a dictionary lookup, not a signature check.
final class JWTVerifier: Sendable {
    private let configuration: JWTConfiguration
    private let keys: KeySet
    private let cache = NIOLockedValueBox([Data: CachedGrant]())

    private struct CachedGrant {
        let grant: Grant
        let expires: Date
        let keysVersion: Int
    }

    /// Grants kept at most; beyond it the expired ones go, then all of them.
    static let cacheCapacity = 50_000

    init(configuration: JWTConfiguration, keys: KeySet) {
        self.configuration = configuration
        self.keys = keys
    }

    /// What `token` grants; `digest` is its SHA-256, the key of the cache.
    func grant(for token: String, digest: Data, now: Date = Date()) async throws(TokenRefusal) -> Grant {
        var current = keys.current()
        if let cached = cache.withLockedValue({ $0[digest] }), cached.keysVersion == current.version,
            now < cached.expires
        {
            return cached.grant
        }
        let header = try Self.header(of: token)
        if current.algorithm(forKeyID: header.kid) == nil { current = await keys.reread() }
        try Self.check(header, against: current)
        let claims = try await Self.verifiedClaims(token, with: current)
        let expires = try checkTimes(claims, now: now)
        try checkParties(claims)
        let grant = Grant(role: try role(claims), scopes: try scopes(claims))
        remember(CachedGrant(grant: grant, expires: expires, keysVersion: current.version), for: digest, now: now)
        return grant
    }

    private func remember(_ entry: CachedGrant, for digest: Data, now: Date) {
        cache.withLockedValue { cache in
            if cache.count >= Self.cacheCapacity { cache = cache.filter { now < $0.value.expires } }
            if cache.count >= Self.cacheCapacity { cache.removeAll() }
            cache[digest] = entry
        }
    }
}

// MARK: - Header and signature

extension JWTVerifier {
    struct Header {
        let algorithm: String
        let kid: String?
    }

    /// The header's `alg` and `kid`, read before any key is chosen.
    static func header(of token: String) throws(TokenRefusal) -> Header {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let data = Data(base64URL: parts[0]),
            case .object(let fields)? = try? JSONParser.parse(data)
        else {
            throw TokenRefusal(.unknownToken, "not a token of this server, nor a JWT (three base64url parts)")
        }
        guard fields["crit"] == nil else {
            throw TokenRefusal(
                .malformed, "the JWT header lists critical extensions (`crit`), which the server does not take")
        }
        guard case .string(let algorithm)? = fields["alg"] else {
            throw TokenRefusal(.malformed, "the JWT header has no `alg`")
        }
        var kid: String?
        if case .string(let value)? = fields["kid"] { kid = value }
        return Header(algorithm: algorithm, kid: kid)
    }

    /// The header names a key the server holds, and that key's algorithm.
    static func check(_ header: Header, against keys: KeySet.Keys) throws(TokenRefusal) {
        guard header.algorithm == "HS256" || KeySet.asymmetricAlgorithms.contains(header.algorithm) else {
            throw TokenRefusal(.algorithm, "the JWT's alg \(quoted(header.algorithm)) is not one the server takes")
        }
        if keys.needsKeyID, header.kid == nil {
            throw TokenRefusal(.unknownKey, "the JWT names no key (`kid`); the server's keys are a key set")
        }
        guard let expected = keys.algorithm(forKeyID: header.kid) else {
            throw TokenRefusal(
                .unknownKey,
                "the JWT's key \(quoted(header.kid ?? "")) is not in the server's key set, even after reading it again")
        }
        guard header.algorithm == expected else {
            throw TokenRefusal(
                .algorithm, "the JWT says alg \(quoted(header.algorithm)), but its key is for \(expected)")
        }
    }

    /// The payload, once the signature verifies.
    static func verifiedClaims(_ token: String, with keys: KeySet.Keys) async throws(TokenRefusal) -> [String:
        JSONValue]
    {
        do {
            return try await keys.collection.verify(token, as: JWTClaims.self).members
        } catch let error as JWTError where error.errorType == .signatureVerificationFailed {
            throw TokenRefusal(.signature, "the JWT's signature does not verify with the key it names")
        } catch {
            throw TokenRefusal(
                .malformed,
                "the JWT cannot be read: its signature or payload is not base64url, or the payload no JSON object")
        }
    }
}

// MARK: - Claims

extension JWTVerifier {
    /// `exp` (required) has not passed and `nbf` (when present) has come, give or take the
    /// leeway; answers when the token stops being accepted.
    func checkTimes(_ claims: [String: JSONValue], now: Date) throws(TokenRefusal) -> Date {
        let leeway = TimeInterval(configuration.leeway.components.seconds)
        guard let expiry = try Self.date(claims, "exp") else {
            throw TokenRefusal(.claim, "the JWT has no `exp`; the server takes only tokens that expire")
        }
        guard now < expiry.addingTimeInterval(leeway) else {
            throw TokenRefusal(
                .expired, "the JWT expired at \(Self.format(expiry)) (leeway \(Int(leeway)) s); get a new one")
        }
        if let start = try Self.date(claims, "nbf"), now < start.addingTimeInterval(-leeway) {
            throw TokenRefusal(
                .notYetValid, "the JWT is not valid before \(Self.format(start)) (leeway \(Int(leeway)) s)")
        }
        return expiry.addingTimeInterval(leeway)
    }

    /// `iss` and `aud` name this server's issuer and audience, when it has them.
    func checkParties(_ claims: [String: JSONValue]) throws(TokenRefusal) {
        if let issuer = configuration.issuer, claims["iss"] != .string(issuer) {
            throw TokenRefusal(.wrongParty, "the JWT's issuer (`iss`) is not \(issuer)")
        }
        guard let audience = configuration.audience else { return }
        let audiences: [JSONValue] =
            switch claims["aud"] {
            case .array(let values)?: values
            case let value?: [value]
            case nil: []
            }
        guard audiences.contains(.string(audience)) else {
            throw TokenRefusal(.wrongParty, "the JWT's audience (`aud`) does not include \(audience)")
        }
    }

    /// The configured role, or the one the role claim holds: `read` or `write`.
    func role(_ claims: [String: JSONValue]) throws(TokenRefusal) -> TokenSet.Role {
        guard let path = configuration.roleClaim else { return min(configuration.role, .write) }
        let values: [JSONValue] =
            switch Self.claim(path, in: claims) {
            case .array(let values)?: values
            case let value?: [value]
            case nil: throw TokenRefusal(.claim, "the JWT has no claim \(path), which gives its role")
            }
        if values.contains(.string("write")) { return .write }
        if values.contains(.string("read")) { return .read }
        throw TokenRefusal(.claim, "the JWT's claim \(path) holds neither \"read\" nor \"write\"")
    }

    /// The scope values the scope claim holds (an array of integers or strings, or one), or every
    /// value when no scope claim is configured (the dataset has no scope then).
    func scopes(_ claims: [String: JSONValue]) throws(TokenRefusal) -> ScopeGrant {
        guard let path = configuration.scopeClaim else { return .all }
        let values: [JSONValue] =
            switch Self.claim(path, in: claims) {
            case .array(let values)?: values
            case let value?: [value]
            case nil: throw TokenRefusal(.claim, "the JWT has no claim \(path), which gives its scope values")
            }
        guard values.allSatisfy({ $0.keyString != nil }) else {
            throw TokenRefusal(.claim, "the JWT's claim \(path) holds a value that is neither an integer nor a string")
        }
        return .only(values)
    }

    /// The claim at `path`: a member name, or member names joined by dots through objects. A
    /// name holding dots itself (`https://example.com/role`, as Auth0 namespaces them) is found
    /// too: the longest name that matches is taken at each step.
    static func claim(_ path: String, in claims: [String: JSONValue]) -> JSONValue? {
        claim(path.split(separator: ".", omittingEmptySubsequences: false).map(String.init)[...], in: claims)
    }

    private static func claim(_ names: ArraySlice<String>, in object: [String: JSONValue]) -> JSONValue? {
        for end in stride(from: names.endIndex, to: names.startIndex, by: -1) {
            guard let value = object[names[names.startIndex..<end].joined(separator: ".")] else { continue }
            if end == names.endIndex { return value }
            if case .object(let inner) = value, let found = claim(names[end...], in: inner) { return found }
        }
        return nil
    }

    /// A NumericDate claim (seconds since 1970), or `nil` when absent.
    private static func date(_ claims: [String: JSONValue], _ name: String) throws(TokenRefusal) -> Date? {
        switch claims[name] {
        case nil: return nil
        case .int(let seconds)?: return Date(timeIntervalSince1970: TimeInterval(seconds))
        case .double(let seconds)?: return Date(timeIntervalSince1970: seconds)
        case let value?:
            throw TokenRefusal(.claim, "the JWT's `\(name)` is a \(value.kindName), not a number of seconds")
        }
    }

    private static func format(_ date: Date) -> String {
        date.formatted(.iso8601)
    }
}

/// A value from a token, fit for a message: printable ASCII, 64 characters at most, in quotes.
func quoted(_ value: String) -> String {
    let printable = value.unicodeScalars.prefix(64).map {
        $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F ? Character($0) : "?"
    }
    return
        "\"\(String(printable).replacingOccurrences(of: "\"", with: "'"))\(value.unicodeScalars.count > 64 ? "…" : "")\""
}

extension Data {
    /// Base64url without padding, as JWTs write their parts.
    init?(base64URL text: Substring) {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        self.init(base64Encoded: base64)
    }
}

/// A JWT payload kept whole: the claims are checked by ``JWTVerifier``, not by JWTKit (and tests
/// sign what they like with it).
package struct JWTClaims: JWTPayload {
    package let members: [String: JSONValue]

    package init(members: [String: JSONValue]) { self.members = members }

    package init(from decoder: any Decoder) throws {
        members = try [String: JSONValue](from: decoder)
    }

    package func encode(to encoder: any Encoder) throws { try members.encode(to: encoder) }

    package func verify(using algorithm: some JWTAlgorithm) async throws {}
}
