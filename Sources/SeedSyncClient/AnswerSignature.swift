public import Crypto
public import Foundation
public import SeedSyncModel

/// The origin's signature on a `GET /v1/changes` answer (`docs/PROTOCOL.md` §11, "Signed answers"):
/// an origin given an Ed25519 key signs what it answers at each address, and a client that
/// trusts the key refuses an answer that does not carry a valid signature of it. Caches and CDNs
/// keep the header with the body, so an answer passed on by any of them still proves itself: a
/// change set altered, dropped, reordered or added on the way, or an answer of another address
/// passed off for this one, is refused before anything of it is applied.
///
/// The header is `SeedSync-Signature: key=<id>, ed25519=<base64>`, where `<id>` is the first 8
/// bytes of the SHA-256 of the raw public key in hex (as `seed-verify` names keys) and the
/// signature is over ``message(address:body:)``.
///
/// ```swift
/// let header = AnswerSignature.header(signing: body, at: address, with: key)   // the origin
/// try AnswerSignature.check(header, of: body, at: address, keys: trusted, label: "GET /v1/changes")  // a client
/// ```
public enum AnswerSignature {
    /// The response header's name.
    public static let headerName = "SeedSync-Signature"

    /// The canonical form of an answer's address: `after=R&schemaVersion=V`, then `&limit=L` and
    /// `&scopes=S` (the one spelling of §10) when the request named them. The `chain` a request
    /// sends does not change the answer, so it is not part of it.
    public static func address(after: Int64, schemaVersion: Int, limit: Int?, scopes: ScopeList?) -> String {
        var text = "after=\(after)&schemaVersion=\(schemaVersion)"
        if let limit { text += "&limit=\(limit)" }
        if let scopes { text += "&scopes=\(scopes.parameter)" }
        return text
    }

    /// The bytes signed: `seedsync-changes-answer-v1`, a line feed, the address, a line feed, and
    /// the SHA-256 of the answer's body (uncompressed) in lower-case hex.
    public static func message(address: String, body: some DataProtocol) -> [UInt8] {
        Array("seedsync-changes-answer-v1\n\(address)\n\(SHA256.hash(data: body).lowercaseHex)".utf8)
    }

    /// The header value that signs `body` at `address` with `key`.
    public static func header(
        signing body: some DataProtocol, at address: String, with key: Curve25519.Signing.PrivateKey
    ) throws -> String {
        let signature = try key.signature(for: message(address: address, body: body))
        return "key=\(keyID(key.publicKey)), ed25519=\(signature.base64EncodedString())"
    }

    /// The id of a public key: the first 8 bytes of the SHA-256 of its raw form, in hex.
    public static func keyID(_ key: Curve25519.Signing.PublicKey) -> String {
        SHA256.hash(data: key.rawRepresentation).prefix(8).lowercaseHex
    }

    /// Checks that `header` signs `body` at `address` with one of `keys`.
    ///
    /// - Throws: ``SyncClientError/Code/untrustedAnswer`` saying what is wrong (no signature, a
    ///   key not trusted, a signature that does not match), prefixed with `label`.
    public static func check(
        _ header: String?, of body: Data, at address: String, keys: [Curve25519.Signing.PublicKey], label: String
    ) throws {
        func refuse(_ reason: String) -> SyncClientError {
            SyncClientError(
                .untrustedAnswer,
                "\(label): \(reason); a cache or proxy between the origin and this client altered or replaced the answer, and nothing of it was applied"
            )
        }
        guard let header else { throw refuse("the answer carries no \(headerName), and answers must be signed") }
        var fields: [String: String] = [:]
        for part in header.split(separator: ",") {
            let pair = part.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
            if pair.count == 2 { fields[String(pair[0])] = String(pair[1]) }
        }
        guard let id = fields["key"], let encoded = fields["ed25519"], let signature = Data(base64Encoded: encoded)
        else { throw refuse("its \(headerName) is not key=…, ed25519=…") }
        guard let key = keys.first(where: { keyID($0) == id }) else {
            throw refuse("it is signed by key \(id.clippedForMessage), which is not trusted")
        }
        guard key.isValidSignature(signature, for: message(address: address, body: body)) else {
            throw refuse("its signature by key \(id) does not match the answer")
        }
    }
}
