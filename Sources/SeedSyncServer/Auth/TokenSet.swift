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
/// tokens.role(of: "s3cret") // .read, .write, .admin or nil
/// ```
public struct TokenSet: Sendable {
    /// What a token allows, each role everything the ones before it allow: `read` syncs,
    /// `write` also pushes change sets, `admin` also uses the admin endpoints.
    public enum Role: Sendable, Comparable {
        case read
        case write
        case admin
    }

    private let entries: [(digest: [UInt8], role: Role)]

    public init(readTokens: [String], writeTokens: [String] = [], adminTokens: [String]) {
        let roles: [(tokens: [String], role: Role)] = [
            (readTokens, .read), (writeTokens, .write), (adminTokens, .admin),
        ]
        entries = roles.flatMap { tokens, role in tokens.filter { !$0.isEmpty }.map { (Self.digest($0), role) } }
    }

    /// Whether no token is configured.
    public var isEmpty: Bool { entries.isEmpty }

    /// The strongest role `token` has, or `nil` for an unknown token.
    public func role(of token: String) -> Role? {
        role(ofDigest: Self.digest(token))
    }

    /// The strongest role of the token whose SHA-256 is `presented`.
    func role(ofDigest presented: [UInt8]) -> Role? {
        var best: Role?
        for entry in entries {
            var difference: UInt8 = 0
            for (a, b) in zip(entry.digest, presented) { difference |= a ^ b }
            if difference == 0, best == nil || entry.role > best! { best = entry.role }
        }
        return best
    }

    /// Tokens from `SEED_SERVER_TOKENS`, `SEED_SERVER_WRITE_TOKENS` and
    /// `SEED_SERVER_ADMIN_TOKENS` (comma-separated) plus the token files given (one or more
    /// tokens per file, separated by commas or lines; `#` starts a comment line).
    ///
    /// - Throws: ``TokenFileError`` when a file cannot be read.
    public static func load(
        environment: [String: String],
        readTokenFile: String? = nil,
        writeTokenFile: String? = nil,
        adminTokenFile: String? = nil
    ) throws -> TokenSet {
        func tokens(_ variable: String, _ file: String?) throws -> [String] {
            split(environment[variable] ?? "") + (try file.map(Self.tokens(inFile:)) ?? [])
        }
        return TokenSet(
            readTokens: try tokens("SEED_SERVER_TOKENS", readTokenFile),
            writeTokens: try tokens("SEED_SERVER_WRITE_TOKENS", writeTokenFile),
            adminTokens: try tokens("SEED_SERVER_ADMIN_TOKENS", adminTokenFile)
        )
    }

    /// The admin token a command sends to a running server (`seed-server status --server`): the
    /// first of `file`, read as `serve` reads its token files, else the first of
    /// `SEED_SERVER_ADMIN_TOKEN` or `SEED_SERVER_ADMIN_TOKENS`; `nil` when none is given.
    ///
    /// ```swift
    /// let token = try TokenSet.adminToken(environment: ProcessInfo.processInfo.environment, file: path)
    /// ```
    ///
    /// - Throws: ``TokenFileError`` when `file` cannot be read.
    public static func adminToken(environment: [String: String], file: String?) throws -> String? {
        if let file { return try tokens(inFile: file).first }
        return split(environment["SEED_SERVER_ADMIN_TOKEN"] ?? environment["SEED_SERVER_ADMIN_TOKENS"] ?? "").first
    }

    static func tokens(inFile path: String) throws -> [String] {
        guard let data = FileManager.default.contents(atPath: path) else { throw TokenFileError(unreadable: path) }
        return String(decoding: data, as: UTF8.self)
            .split(whereSeparator: \.isNewline)
            .filter { !$0.trimmingCharacters(in: .whitespaces).hasPrefix("#") }
            .flatMap { split(String($0)) }
    }

    private static func split(_ list: String) -> [String] {
        list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    static func digest(_ token: String) -> [UInt8] {
        Array(SHA256.hash(data: Data(token.utf8)))
    }
}

/// A token file that cannot be read.
public struct TokenFileError: Error, CustomStringConvertible, Sendable {
    /// What went wrong. New codes may be added: a `switch` over it needs a `default`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case unreadable
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The file does not exist or cannot be read.
        public static let unreadable = Code(.unreadable)

        public var description: String { base.rawValue }
    }

    public let code: Code
    /// The file.
    public let path: String
    public var description: String { "cannot read token file \(path)" }

    init(unreadable path: String) {
        code = .unreadable
        self.path = path
    }
}
