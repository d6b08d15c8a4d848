package import Crypto
import CryptoExtras
import Foundation

/// The Ed25519 private key `seed-build` signs manifests with (``SeedManifest/signed(with:)``).
///
/// Kept as a PEM `PRIVATE KEY` block (PKCS #8), the form `openssl genpkey -algorithm ed25519`
/// writes, in a file only its owner can read or in the `SEED_SIGNING_KEY` environment variable.
/// Its text never appears in a description, an error or a log line.
///
/// ```swift
/// let key = SeedSigningKey()                       // a new key pair
/// try key.write(to: "keys/seeds.pem")              // and keys/seeds.pub.pem
/// let again = try SeedSigningKey.read(from: "keys/seeds.pem")
/// print(again.publicKey.base64)                    // what apps trust
/// ```
public struct SeedSigningKey: Sendable, CustomStringConvertible {
    package let key: Curve25519.Signing.PrivateKey

    /// A new, random key.
    public init() {
        key = Curve25519.Signing.PrivateKey()
    }

    /// Reads a key from its PEM block.
    ///
    /// - Throws: ``SeedError/Code/invalidKey``, without any of the text.
    public init(pem: String) throws(SeedError) {
        do {
            key = try Curve25519.Signing.PrivateKey(pemRepresentation: pem)
        } catch {
            throw SeedError(.invalidKey, "not an Ed25519 private key in PEM (-----BEGIN PRIVATE KEY-----)")
        }
    }

    /// Reads the key in the file at `path`.
    public static func read(from path: String) throws(SeedError) -> SeedSigningKey {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw SeedError.file(error, "read the signing key \(path)")
        }
        do {
            return try SeedSigningKey(pem: text)
        } catch {
            throw SeedError(.invalidKey, "\(path) is \(error.description)")
        }
    }

    /// The public half, which apps trust.
    public var publicKey: SeedPublicKey { SeedPublicKey(key.publicKey) }

    /// The PEM `PRIVATE KEY` block, ending in a newline.
    public var pemRepresentation: String { key.pemRepresentation + "\n" }

    /// Names the key by its public half only.
    public var description: String { "signing key \(publicKey.id)" }

    /// Writes the private key to `path` (readable by its owner alone) and the public key to
    /// ``publicKeyPath(for:)``; neither may exist yet.
    public func write(to path: String) throws {
        let publicPath = Self.publicKeyPath(for: path)
        for existing in [path, publicPath] where FileManager.default.fileExists(atPath: existing) {
            throw SeedError(.alreadyExists, "\(existing) exists; remove it or choose another path for the key")
        }
        try FileSystem.write(Data(pemRepresentation.utf8), to: path, permissions: 0o600)
        try FileSystem.write(Data(publicKey.pemRepresentation.utf8), to: publicPath, permissions: 0o644)
    }

    /// Where ``write(to:)`` puts the public key of a private key at `path`: `keys/seeds.pem` →
    /// `keys/seeds.pub.pem`.
    public static func publicKeyPath(for path: String) -> String {
        (path.hasSuffix(".pem") ? String(path.dropLast(4)) : path) + ".pub.pem"
    }

    /// The signature of `message`.
    func signature(of message: [UInt8]) -> Data {
        try! key.signature(for: message)  // Ed25519 signing fails only on an invalid key, never held here
    }
}
