import Crypto
public import Foundation
import SeedSyncModel

/// The keys whose signatures an app or `seed-verify --trust` accepts on a seed's manifest.
///
/// Empty, nothing is checked: a seed is used on its manifest's SHA-256 (or its content digest)
/// alone, as before signing existed. With keys, a seed is used only when its manifest carries a
/// valid signature by one of them, and the manifest's SHA-256 then proves the file. Several keys
/// may be trusted at once, so that a new key can sign seeds before the old one is dropped.
///
/// ```swift
/// let trusted = TrustedKeys([try SeedPublicKey("MCowBQYDK2VwAyEA…")])
/// let key = try trusted.check(manifestJSON: data, manifest: manifest, of: "demo.sqlite.gz")
/// ```
public struct TrustedKeys: Sendable, Hashable, CustomStringConvertible {
    public var keys: [SeedPublicKey]

    public init(_ keys: [SeedPublicKey] = []) {
        self.keys = keys
    }

    /// Whether no key is trusted, and nothing checked.
    public var isEmpty: Bool { keys.isEmpty }

    /// Checks the signatures of the manifest whose JSON is `json` (and which decodes to
    /// `manifest`), of the seed named `seed` in messages.
    ///
    /// A signature by a trusted key that does not verify refuses the seed even when another
    /// verifies: the manifest was changed after it was signed.
    ///
    /// - Returns: the trusted key of the first signature that verifies.
    /// - Throws: ``SeedError/Code/unsigned`` for a manifest without signatures,
    ///   ``SeedError/Code/badSignature`` for one that does not verify,
    ///   ``SeedError/Code/untrustedKey`` when no signature is by a trusted key.
    @discardableResult
    public func check(manifestJSON json: Data, manifest: SeedManifest, of seed: String) throws(SeedError)
        -> SeedPublicKey
    {
        let signatures = manifest.signatures ?? []
        guard !signatures.isEmpty else {
            throw SeedError(
                .unsigned,
                "\(seed) is not signed: its manifest carries no signature, and this app trusts signed seeds only (keys \(ids)); build it with seed-build --signing-key"
            )
        }
        let message = try SeedManifest.signedMessage(ofJSON: json)
        var verifiedBy: SeedPublicKey?
        for signature in signatures {
            guard let key = keys.first(where: { $0.id == signature.key }) else { continue }
            guard let bytes = Data(base64Encoded: signature.ed25519), key.key.isValidSignature(bytes, for: message)
            else {
                throw SeedError(
                    .badSignature,
                    "\(seed) has a wrong signature: the manifest's signature by key \(key.id) does not match it, so the manifest was changed after it was signed (or forged); do not ship it, build and sign it again"
                )
            }
            verifiedBy = verifiedBy ?? key
        }
        guard let verifiedBy else {
            throw SeedError(
                .untrustedKey,
                "\(seed) is signed by an unknown key: its manifest is signed by key \(signatures.map(\.key).joined(separator: ", ")), and only keys \(ids) are trusted; trust the key that signed it, or sign it with a trusted one"
            )
        }
        return verifiedBy
    }

    /// Checks the manifest at `path` (see ``check(manifestJSON:manifest:of:)``), or that there is
    /// one: a seed without a manifest is unsigned.
    ///
    /// - Returns: the manifest, `nil` when it is missing and no key is trusted.
    public func readManifest(at path: String, of seed: String) throws -> SeedManifest? {
        guard FileManager.default.fileExists(atPath: path) else {
            guard isEmpty else {
                throw SeedError(
                    .unsigned,
                    "\(seed) is not signed: there is no manifest at \(path), and this app trusts signed seeds only (keys \(ids))"
                )
            }
            return nil
        }
        let (manifest, json) = try SeedManifest.readWithJSON(from: path)
        if !isEmpty { try check(manifestJSON: json, manifest: manifest, of: seed) }
        return manifest
    }

    /// The trusted keys' ids, comma-separated.
    public var description: String { keys.map(\.id).joined(separator: ", ") }

    private var ids: String { description }
}
