package import Foundation

/// A seed a team ships, as `seed-build --register` describes it to the server
/// (`POST /v1/admin/seeds`), so that compaction keeps the history it needs to catch up.
///
/// ```json
/// {"sha256": "9f86d0…", "revision": 41200, "schemaVersion": 2}
/// {"sha256": "5e1a7c…", "revision": 41200, "schemaVersion": 2, "scopes": [42]}
/// {"sha256": "9f86d0…", "revision": 41200, "schemaVersion": 2, "url": "https://cdn.example.com/seeds/events.sqlite.gz"}
/// ```
public struct SeedRegistration: Codable, Sendable, Hashable {
    /// The SHA-256 of the seed file (its manifest's `sha256`), lowercase hex.
    public var sha256: String
    /// The revision the seed is at.
    public var revision: Int64
    /// The seed's schema version.
    public var schemaVersion: Int
    /// The scope values whose rows the seed holds (its manifest's `scopes`), or `nil` for every
    /// value: a reader granted them is offered the seed (`GET /v1/seeds`, PROTOCOL.md §10).
    public var scopes: [JSONValue]?
    /// Where the seed is published: the `http` or `https` address of its file (plain or `.gz`),
    /// with its manifest beside it, or `nil`. A fresh app with no seed of its own downloads the
    /// newest one it is offered from there (`GET /v1/seeds`).
    public var url: String?

    public init(
        sha256: String, revision: Int64, schemaVersion: Int, scopes: [JSONValue]? = nil, url: String? = nil
    ) {
        self.sha256 = sha256
        self.revision = revision
        self.schemaVersion = schemaVersion
        self.scopes = scopes
        self.url = url
    }

    /// The longest ``url`` a registration may carry, in bytes.
    public static let maxURLLength = 2048

    /// Whether `text` is an address a seed may be published at: an absolute `http` or `https`
    /// URL with a host and a file name (not a folder: no trailing `/`), without a query or a
    /// fragment (the manifest's address is made by replacing the file name), at most
    /// ``maxURLLength`` bytes.
    public static func isValidURL(_ text: String) -> Bool {
        guard text.utf8.count <= maxURLLength, !text.hasSuffix("/"), let url = URL(string: text),
            let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme), url.host?.isEmpty == false,
            url.query == nil, url.fragment == nil
        else { return false }
        return !["", "/", ".", ".."].contains(url.lastPathComponent)
    }

    /// Whether `text` is a SHA-256 as seeds record it: 64 lowercase hexadecimal digits.
    public static func isValidSHA256(_ text: String) -> Bool {
        text.utf8.count == 64
            && text.utf8.allSatisfy {
                (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
                    || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0)
            }
    }
}

/// A registered seed: what `GET /v1/seeds` lists and `seed-server seeds list` prints. Until it is
/// retired, compaction keeps every change set after its revision.
///
/// ```json
/// {"sha256": "9f86d0…", "revision": 41200, "schemaVersion": 2, "registeredAt": "2026-11-24T10:00:00Z",
///  "url": "https://cdn.example.com/seeds/events.sqlite.gz"}
/// ```
public struct RegisteredSeed: Codable, Sendable, Hashable {
    public var sha256: String
    public var revision: Int64
    public var schemaVersion: Int
    /// When it was registered, RFC 3339 in UTC.
    public var registeredAt: String
    /// When it was retired (`seed-server seeds retire`), or `nil` while it pins the history.
    public var retiredAt: String?
    /// The scope values whose rows it holds, sorted, or `nil` for every value.
    public var scopes: [JSONValue]?
    /// Where it is published (``SeedRegistration/url``), or `nil`. In `GET /v1/seeds`, a seed
    /// registered without one that the server publishes itself (`seed-server serve --seeds`) has
    /// the address of its file on the server, a path to append to the server's base address
    /// (`v1/seeds/{sha256}/{file}`).
    public var url: String?

    public init(
        sha256: String, revision: Int64, schemaVersion: Int, registeredAt: String, retiredAt: String? = nil,
        scopes: [JSONValue]? = nil, url: String? = nil
    ) {
        self.sha256 = sha256
        self.revision = revision
        self.schemaVersion = schemaVersion
        self.registeredAt = registeredAt
        self.retiredAt = retiredAt
        self.scopes = scopes
        self.url = url
    }

    /// Whether a reader granted `grant` is offered the seed: it holds the rows of values the
    /// grant holds, and no others. A seed of every value is offered to a reader of every value.
    public func isOffered(to grant: ScopeGrant) -> Bool {
        grant.offers(seedOf: scopes)
    }

    /// ``scopes`` as a store keeps them: the JSON array, or `nil`.
    package var scopesText: String? {
        scopes.map { String(decoding: JSONWriter.bytes(of: .array($0)), as: UTF8.self) }
    }

    /// ``scopes`` from what a store keeps.
    package static func scopes(fromText text: String?) throws -> [JSONValue]? {
        guard let text else { return nil }
        guard case .array(let values) = try JSONParser.parse(Array(text.utf8)) else {
            throw SyncStoreError.invalidRegistration("the stored scopes of a seed are not a JSON array: \(text)")
        }
        return values
    }
}

/// The answer of `GET /v1/seeds`: every registered seed, oldest revision first.
public struct SeedList: Codable, Sendable, Hashable {
    public var seeds: [RegisteredSeed]

    public init(seeds: [RegisteredSeed]) {
        self.seeds = seeds
    }
}

extension SeedRegistration {
    /// What a store does with a registration that passes ``check(revision:minRevision:history:existing:)``.
    package enum Outcome: Sendable, Hashable {
        /// The seed pins the history already, at the same address: nothing to write, the record answered.
        case registered(RegisteredSeed)
        /// The seed is published at another address now, or was retired: the record's `url` is to
        /// be written, and with `reactivated` its `retiredAt` cleared (it pins the history again
        /// from now on, as `seed-build --register` promises). A store clears it in the statement
        /// that writes the address alone, so a retirement made meanwhile is never undone by an
        /// address change.
        case updated(RegisteredSeed, reactivated: Bool)
        /// A seed not seen before: this record is to be written.
        case new(RegisteredSeed)
    }

    /// The rules every store checks a registration by, given its state: the SHA-256's form, the
    /// address's, a version the store serves, a revision its history reaches (a retired seed too,
    /// before it pins the history again), and the same values as an `existing` record of the same
    /// seed. The address may change (a seed moved to another host); without one, the record keeps
    /// its own.
    ///
    /// - Throws: ``SyncStoreError`` naming the rule broken.
    package func check(
        revision current: Int64, minRevision: Int64, history: SchemaHistory, existing: RegisteredSeed?
    ) throws(SyncStoreError) -> Outcome {
        guard Self.isValidSHA256(sha256) else {
            throw .invalidRegistration("sha256 must be 64 lowercase hexadecimal digits")
        }
        if let url, !Self.isValidURL(url) {
            throw .invalidRegistration(
                "url must be an http:// or https:// address of the seed's file (no query, no trailing /), at most \(Self.maxURLLength) bytes"
            )
        }
        let scopes = try checkScopes(history.newest.schema.scope)
        if let existing {
            guard existing.revision == revision, existing.schemaVersion == schemaVersion, existing.scopes == scopes
            else {
                throw .invalidRegistration(
                    "seed \(sha256) is registered already at revision \(existing.revision), schema version \(existing.schemaVersion)\(existing.scopes.map { ", scopes \(ScopeList($0))" } ?? "")"
                )
            }
            var record = existing
            record.url = url ?? existing.url
            guard existing.retiredAt != nil else {
                return record == existing ? .registered(existing) : .updated(record, reactivated: false)
            }
            if revision < minRevision { throw .historyExpired(requested: revision, minRevision: minRevision) }
            record.retiredAt = nil
            return .updated(record, reactivated: true)
        }
        guard history.version(schemaVersion) != nil else {
            throw .unknownSchemaVersion(schemaVersion, kept: history.versions.map(\.number))
        }
        if revision < minRevision { throw .historyExpired(requested: revision, minRevision: minRevision) }
        if revision > current { throw .revisionAhead(requested: revision, revision: current) }
        var record = record()
        record.scopes = scopes
        return .new(record)
    }

    /// ``scopes`` sorted, each once, after checking that the dataset has a scope (`scope`) whose
    /// values they are.
    private func checkScopes(_ scope: ScopeDeclaration?) throws(SyncStoreError) -> [JSONValue]? {
        guard let scopes else { return nil }
        guard let scope else { throw .invalidRegistration("scopes must be left out: the dataset has no scope") }
        if let wrong = scopes.first(where: { value in value.keyString.flatMap(scope.type.key(from:)) != value }) {
            throw .invalidRegistration(
                "scopes must hold \(scope.name) values of type \(scope.type.rawValue); \(wrong.kindName) \(wrong.keyString?.clippedForMessage ?? "") is not one"
            )
        }
        return ScopeList(scopes).values
    }

    /// The record of this seed, registered `now`.
    package func record(at now: Date = Date()) -> RegisteredSeed {
        RegisteredSeed(
            sha256: sha256, revision: revision, schemaVersion: schemaVersion,
            registeredAt: RegisteredSeed.timestamp(now), scopes: scopes, url: url)
    }
}

extension RegisteredSeed {
    /// `date` as the records write it: RFC 3339 in UTC, whole seconds.
    package static func timestamp(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: date)
    }
}

extension ScopeGrant {
    /// Whether a reader granted this may have a seed of the scope values `scopes` (`nil`: every
    /// value): it holds the rows of values the grant holds, and no others.
    package func offers(seedOf scopes: [JSONValue]?) -> Bool {
        guard let scopes else { return isAll }
        return ScopeGrant.only(scopes).isSubset(of: self)
    }
}
