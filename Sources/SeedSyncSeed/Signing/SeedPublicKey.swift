package import Crypto
import CryptoExtras
import Foundation
import SeedSyncModel

/// An Ed25519 public key that seeds are checked against (``TrustedKeys``): what an app or
/// `seed-verify --trust` holds, the counterpart of a ``SeedSigningKey``.
///
/// Written as a PEM `PUBLIC KEY` block (SubjectPublicKeyInfo, what `openssl pkey -pubout` prints
/// for an Ed25519 key) or as its 32 raw bytes in standard base64, one line:
///
/// ```swift
/// let key = try SeedPublicKey("MCowBQYDK2VwAyEA…")  // or the PEM text
/// print(key.id)  // "3f9c0a4e1b7d2c85": the 16 hex digits a manifest's signature names it by
/// ```
public struct SeedPublicKey: Sendable, Hashable, CustomStringConvertible {
    package let key: Curve25519.Signing.PublicKey

    init(_ key: Curve25519.Signing.PublicKey) {
        self.key = key
    }

    /// Reads a key from its PEM block or its base64 raw bytes; surrounding white space is ignored.
    ///
    /// - Throws: ``SeedError/Code/invalidKey`` when the text is neither.
    public init(_ text: String) throws(SeedError) {
        let text = text.trimmingCharacters(in: .whitespacesAndNewlines)
        do {
            if text.hasPrefix("-----BEGIN") {
                key = try Curve25519.Signing.PublicKey(pemRepresentation: text)
            } else if let raw = Data(base64Encoded: text), raw.count == 32 {
                key = try Curve25519.Signing.PublicKey(rawRepresentation: raw)
            } else {
                throw SeedError(.invalidKey, "")
            }
        } catch {
            throw SeedError(
                .invalidKey,
                "not an Ed25519 public key: expected a PEM PUBLIC KEY block or 32 bytes in base64 (44 characters)")
        }
    }

    /// The key a command-line argument names: the path of a file holding it, else the key itself
    /// in base64.
    ///
    /// - Throws: ``SeedError/Code/invalidKey`` naming the argument when it is neither a readable
    ///   key file nor a key.
    public static func resolve(_ argument: String) throws(SeedError) -> SeedPublicKey {
        if FileManager.default.fileExists(atPath: argument) {
            let text: String
            do {
                text = try String(contentsOfFile: argument, encoding: .utf8)
            } catch {
                throw SeedError.file(error, "read the public key \(argument)")
            }
            do {
                return try SeedPublicKey(text)
            } catch {
                throw SeedError(.invalidKey, "\(argument) is \(error.description)")
            }
        }
        do {
            return try SeedPublicKey(argument)
        } catch {
            throw SeedError(.invalidKey, "\(argument.clippedForMessage) is no file, and \(error.description)")
        }
    }

    /// The key's name in a signature: the first 8 bytes of the SHA-256 of its 32 raw bytes, in
    /// lowercase hex.
    public var id: String { Self.id(of: key.rawRepresentation) }

    /// The 32 raw bytes in standard base64: the form `--trust` takes on a command line.
    public var base64: String { key.rawRepresentation.base64EncodedString() }

    /// The PEM `PUBLIC KEY` block, ending in a newline.
    public var pemRepresentation: String { key.pemRepresentation + "\n" }

    public var description: String { "Ed25519 key \(id)" }

    public static func == (lhs: SeedPublicKey, rhs: SeedPublicKey) -> Bool {
        lhs.key.rawRepresentation == rhs.key.rawRepresentation
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(key.rawRepresentation)
    }

    static func id(of raw: Data) -> String {
        SHA256.hash(data: raw).prefix(8).lowercaseHex
    }
}
