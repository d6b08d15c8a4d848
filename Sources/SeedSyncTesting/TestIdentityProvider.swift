import Foundation
import JWTKit
import SeedSyncModel
import SeedSyncServer

/// An identity provider for tests: signs JWTs with ES256 keys of a key set (by `kid`), or with an
/// HS256 secret, and writes the JSON Web Key Set a server reads.
///
/// ```swift
/// let provider = await TestIdentityProvider(kids: ["k1"])
/// let token = try await provider.token(kid: "k1", claims: ["exp": .int(expiry), "role": "write"])
/// ```
public struct TestIdentityProvider: Sendable {
    /// An HS256 secret long enough for a server to take.
    public static let secret = "a shared secret for tests, longer than thirty-two bytes"

    private let signing: JWTKeyCollection
    private let publicKeys: [String: String]

    /// A provider with one ES256 key per `kid`.
    public init(kids: [String]) async {
        signing = JWTKeyCollection()
        var publicKeys: [String: String] = [:]
        for kid in kids {
            let key = ES256PrivateKey()
            await signing.add(ecdsa: key, kid: JWKIdentifier(string: kid))
            let parameters = key.parameters!
            publicKeys[kid] =
                #"{"kty":"EC","crv":"P-256","use":"sig","alg":"ES256","kid":"\#(kid)","x":"\#(parameters.x)","y":"\#(parameters.y)"}"#
        }
        self.publicKeys = publicKeys
    }

    /// A provider signing with ``secret`` (HS256).
    public init(secret: String = TestIdentityProvider.secret) async {
        signing = JWTKeyCollection()
        await signing.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
        publicKeys = [:]
    }

    /// The JSON Web Key Set of the public keys of `kids` (all of them when `nil`).
    public func keySet(_ kids: [String]? = nil) -> String {
        let chosen = (kids ?? publicKeys.keys.sorted()).compactMap { publicKeys[$0] }
        return #"{"keys":[\#(chosen.joined(separator: ","))]}"#
    }

    /// A token of `claims`, signed with the key `kid` (the secret when `nil`).
    public func token(kid: String? = nil, claims: [String: JSONValue]) async throws -> String {
        try await signing.sign(JWTClaims(members: claims), kid: kid.map { JWKIdentifier(string: $0) })
    }

    /// Claims that expire `lifetime` seconds from now, plus `extra`.
    public static func claims(expiringIn lifetime: TimeInterval = 300, _ extra: [String: JSONValue] = [:])
        -> [String: JSONValue]
    {
        extra.merging(["exp": .int(Int64(Date().timeIntervalSince1970 + lifetime))]) { given, _ in given }
    }

    /// A token with the header and claims given and a signature of garbage: for `alg: none`,
    /// forged headers and the like.
    public static func forged(header: [String: JSONValue], claims: [String: JSONValue], signature: String = "")
        -> String
    {
        func part(_ value: [String: JSONValue]) -> String {
            (try! JSONEncoder().encode(value)).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
        }
        return "\(part(header)).\(part(claims)).\(signature)"
    }
}

extension TestIdentityProvider {
    /// The JWTs of a dataset split by team (`Fixtures.clubsSchema`): HS256 with ``secret``, role
    /// `write`, the teams in the claim `app_metadata.teams`.
    public static let teamJWT = JWTConfiguration(
        keys: .secret(secret), role: .write, scopeClaim: "app_metadata.teams")

    /// A token of ``teamJWT`` granting `teams`.
    public static func teamToken(_ teams: [JSONValue]) async throws -> String {
        try await TestIdentityProvider().token(
            claims: claims(["app_metadata": .object(["teams": .array(teams)])]))
    }
}

/// A failed expectation with its reason, where a test cannot go on.
public struct TestFailure: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
