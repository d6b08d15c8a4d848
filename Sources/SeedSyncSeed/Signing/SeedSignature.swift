package import Foundation
import SeedSyncModel

/// One signature of a manifest (``SeedManifest/signatures``): the key that made it and the
/// Ed25519 signature of the manifest's signed message (SEED-FORMAT.md §6.1).
///
/// ```json
/// {"key": "3f9c0a4e1b7d2c85", "ed25519": "q1VbX…=="}
/// ```
public struct SeedSignature: Codable, Sendable, Hashable {
    /// The signing key's ``SeedPublicKey/id``.
    public var key: String
    /// The 64-byte signature in standard base64.
    public var ed25519: String

    public init(key: String, ed25519: String) {
        self.key = key
        self.ed25519 = ed25519
    }
}

extension SeedManifest {
    /// What a signature signs: the ASCII line `seedsync-seed-manifest-signature-v1` and a newline
    /// (so that no other message of SeedSync's can pass for a manifest), then the manifest's JSON
    /// object without its `signatures` member as canonical JSON: compact, members sorted by name,
    /// strings escaped as ``JSONWriter`` escapes them (SEED-FORMAT.md §6.1).
    ///
    /// It is computed from the JSON as read, unknown members included, so a manifest of a later
    /// format verifies as it was signed.
    ///
    /// - Throws: ``SeedError/Code/damaged`` when `json` is not a JSON object.
    package static func signedMessage(ofJSON json: some ContiguousBytes) throws(SeedError) -> [UInt8] {
        guard case .object(var members) = try? JSONParser.parse(json) else {
            throw SeedError(.damaged, "the manifest is not a JSON object")
        }
        members["signatures"] = nil
        return Array(signaturePrefix.utf8) + JSONWriter.bytes(of: .object(members))
    }

    static let signaturePrefix = "seedsync-seed-manifest-signature-v1\n"

    /// The manifest signed by each of `keys` (none: unsigned); a signature it had is replaced.
    ///
    /// ```swift
    /// let signed = manifest.signed(with: [try SeedSigningKey.read(from: "keys/seeds.pem")])
    /// try signed.jsonData().write(to: manifestURL)
    /// ```
    public func signed(with keys: [SeedSigningKey]) -> SeedManifest {
        var manifest = self
        manifest.signatures = nil
        guard !keys.isEmpty else { return manifest }
        let message = try! Self.signedMessage(ofJSON: manifest.jsonData())  // its own JSON is an object
        manifest.signatures = keys.map {
            SeedSignature(key: $0.publicKey.id, ed25519: $0.signature(of: message).base64EncodedString())
        }
        return manifest
    }
}
