import Crypto
import Foundation

/// The bearer tokens a server accepts, each with a role.
///
/// Tokens are kept only as SHA-256 digests and a presented token is compared with every one of
/// them in constant time, so neither timing nor a memory dump of the set gives a token away.
/// Tokens are never logged.
///
/// ```swift
/// let tokens = try TokenSet.load(environment: ProcessInfo.processInfo.environment)
/// tokens.role(of: "s3cret") // .read, .admin or nil
/// ```
public struct TokenSet: Sendable {
    /// What a token allows. Admin tokens may also read.
    public enum Role: Sendable, Comparable {
        case read
        case admin
    }

    private let entries: [(digest: [UInt8], role: Role)]

    public init(readTokens: [String], adminTokens: [String]) {
        entries = readTokens.filter { !$0.isEmpty }.map { (Self.digest($0), .read) }
            + adminTokens.filter { !$0.isEmpty }.map { (Self.digest($0), .admin) }
    }

    /// Whether no token is configured.
    public var isEmpty: Bool { entries.isEmpty }

    /// The strongest role `token` has, or `nil` for an unknown token.
    public func role(of token: String) -> Role? {
        let presented = Self.digest(token)
        var best: Role?
        for entry in entries {
            var difference: UInt8 = 0
            for (a, b) in zip(entry.digest, presented) { difference |= a ^ b }
            if difference == 0, best == nil || entry.role > best! { best = entry.role }
        }
        return best
    }

    /// Tokens from `SEED_SERVER_TOKENS` and `SEED_SERVER_ADMIN_TOKENS` (comma-separated) plus
    /// the token files given (one or more tokens per file, separated by commas or lines; `#`
    /// starts a comment line).
    ///
    /// - Throws: ``TokenFileError`` when a file cannot be read.
    public static func load(
        environment: [String: String],
        readTokenFile: String? = nil,
        adminTokenFile: String? = nil
    ) throws -> TokenSet {
        let read = split(environment["SEED_SERVER_TOKENS"] ?? "") + (try readTokenFile.map(tokens(inFile:)) ?? [])
        let admin = split(environment["SEED_SERVER_ADMIN_TOKENS"] ?? "") + (try adminTokenFile.map(tokens(inFile:)) ?? [])
        return TokenSet(readTokens: read, adminTokens: admin)
    }

    static func tokens(inFile path: String) throws -> [String] {
        guard let data = FileManager.default.contents(atPath: path) else { throw TokenFileError(path: path) }
        return String(decoding: data, as: UTF8.self)
            .split(whereSeparator: \.isNewline)
            .filter { !$0.trimmingCharacters(in: .whitespaces).hasPrefix("#") }
            .flatMap { split(String($0)) }
    }

    private static func split(_ list: String) -> [String] {
        list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    private static func digest(_ token: String) -> [UInt8] {
        Array(SHA256.hash(data: Data(token.utf8)))
    }
}

/// A token file that cannot be read.
public struct TokenFileError: Error, CustomStringConvertible {
    public let path: String
    public var description: String { "cannot read token file \(path)" }
}
