import Crypto
import Foundation
import JWTKit
import Logging
import NIOConcurrencyHelpers
import SeedSyncClient
import SeedSyncModel

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The keys JWTs are verified with, as last read from ``JWTConfiguration/keys``.
///
/// Each key is pinned to one algorithm when it is read (a JWK's `alg`, or the one its type and
/// curve allow), and a token must name that algorithm: a token cannot pick how its own signature
/// is checked (`alg: none`, an RSA key used as an HMAC secret). Keys are read again lazily: the
/// first request after ``JWTConfiguration/refreshInterval`` starts a read in the background, and a
/// token naming an unknown `kid` waits for one (at most every
/// ``JWTConfiguration/minimumRefetchInterval``). A read that fails keeps the keys it would have
/// replaced, and is logged.
final class KeySet: Sendable {
    /// One reading of the keys.
    struct Keys: Sendable {
        let collection: JWTKeyCollection
        /// The algorithm of each key by `kid`; for a shared secret, the one algorithm under `""`.
        let algorithms: [String: String]
        /// Whether tokens must name their key (a key set), rather than use the one secret.
        let needsKeyID: Bool
        /// Counts the readings whose keys differed from the reading before: a cached grant is good
        /// only while its keys are.
        let version: Int
        /// The bytes read, to tell a changed key set from the same one read again.
        let source: Data

        func algorithm(forKeyID kid: String?) -> String? {
            needsKeyID ? kid.flatMap { algorithms[$0] } : algorithms[""]
        }
    }

    private struct State {
        var keys: Keys
        var readAt: ContinuousClock.Instant
        var reading: Task<Keys, Never>?
    }

    private let configuration: JWTConfiguration
    private let logger: Logger
    private let state: NIOLockedValueBox<State>

    /// Reads the keys once; the server does not start without them.
    ///
    /// - Throws: ``KeySetError``.
    init(configuration: JWTConfiguration, logger: Logger) async throws {
        self.configuration = configuration
        self.logger = logger
        let keys = try await Self.read(configuration.keys, version: 1, logger: logger)
        state = NIOLockedValueBox(State(keys: keys, readAt: .now))
    }

    /// The keys to verify with now; starts a new reading in the background when they are older
    /// than the refresh interval.
    func current() -> Keys {
        state.withLockedValue { state in
            if state.reading == nil, state.readAt.duration(to: .now) >= configuration.refreshInterval {
                state.reading = startReading(after: state.keys)
            }
            return state.keys
        }
    }

    /// The keys after one more reading, for a token whose `kid` the current ones lack; the current
    /// keys when they were read less than the minimum refetch interval ago.
    func reread() async -> Keys {
        let reading: Task<Keys, Never>? = state.withLockedValue { state in
            if let reading = state.reading { return reading }
            guard state.readAt.duration(to: .now) >= configuration.minimumRefetchInterval else { return nil }
            state.reading = startReading(after: state.keys)
            return state.reading
        }
        guard let reading else { return current() }
        return await reading.value
    }

    /// A task reading the keys once, which installs what it read (or keeps `previous`).
    private func startReading(after previous: Keys) -> Task<Keys, Never> {
        let source = configuration.keys
        return Task { [logger, state] in
            let keys: Keys
            do {
                keys = try await Self.read(source, version: previous.version + 1, logger: logger)
            } catch {
                logger.warning(
                    "cannot read the JWT keys again; keeping the ones read before", metadata: ["error": "\(error)"])
                keys = previous
            }
            let kept = keys.source == previous.source ? previous : keys
            state.withLockedValue { state in
                state.keys = kept
                state.readAt = .now
                state.reading = nil
            }
            return kept
        }
    }
}

extension KeySet {
    /// The algorithms a token may name. HS256 only with a shared secret; `none` never.
    static let asymmetricAlgorithms: Set<String> = [
        "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA",
    ]

    /// Reads keys from `source`.
    static func read(_ source: JWTConfiguration.Keys, version: Int, logger: Logger) async throws -> Keys {
        switch source {
        case .secret(let secret):
            guard secret.utf8.count >= 32 else {
                throw KeySetError(
                    .weakSecret, source: "the JWT secret",
                    "is \(secret.utf8.count) bytes; HS256 needs at least 32 (say, `openssl rand -base64 48`)")
            }
            let collection = JWTKeyCollection()
            await collection.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
            return Keys(
                collection: collection, algorithms: ["": "HS256"], needsKeyID: false, version: version,
                source: Data(SHA256.hash(data: Data(secret.utf8))))
        case .keySetFile(let path):
            guard let data = FileManager.default.contents(atPath: path) else {
                throw KeySetError(
                    .unreadable, source: path, "cannot read the key set file; check the path and its permissions")
            }
            return try await keySet(data, from: path, version: version, logger: logger)
        case .keySetURL(let url):
            return try await keySet(try await download(url), from: url.absoluteString, version: version, logger: logger)
        }
    }

    /// A key set's bytes from `url`: 1 MiB at most, within 10 seconds.
    private static func download(_ url: URL) async throws -> Data {
        var request = URLRequest(url: url, timeoutInterval: 10)
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        do {
            let (response, data) = try await BoundedLoader().load(request, limit: 1 << 20)
            guard response.statusCode == 200 else {
                throw KeySetError(
                    .unreadable, source: url.absoluteString, "answered HTTP \(response.statusCode), not 200")
            }
            return data
        } catch BoundedLoader.Failure.tooLarge(let limit) {
            throw KeySetError(.unreadable, source: url.absoluteString, "answered more than \(limit) bytes")
        } catch BoundedLoader.Failure.transport(let error) {
            throw KeySetError(.unreadable, source: url.absoluteString, "cannot be read: \(error.localizedDescription)")
        }
    }

    /// The signing keys of a JSON Web Key Set, each pinned to its algorithm. Keys the server
    /// cannot use (encryption keys, unknown types, no `kid`) are left out and logged; a set
    /// without one usable key is an error.
    private static func keySet(_ data: Data, from source: String, version: Int, logger: Logger) async throws -> Keys {
        guard case .object(let set)? = try? JSONParser.parse(data), case .array(let members)? = set["keys"] else {
            throw KeySetError(
                .malformed, source: source, "is not a JSON Web Key Set: a JSON object with a `keys` array")
        }
        let collection = JWTKeyCollection()
        var algorithms: [String: String] = [:]
        var skipped: [String] = []
        for (index, member) in members.enumerated() {
            do {
                let (kid, algorithm) = try await add(member, to: collection)
                algorithms[kid] = algorithm
            } catch {
                skipped.append("key \(index): \(error)")
            }
        }
        if !skipped.isEmpty {
            logger.warning(
                "JWT keys left out", metadata: ["source": "\(source)", "keys": "\(skipped.joined(separator: "; "))"])
        }
        guard !algorithms.isEmpty else {
            throw KeySetError(
                .malformed, source: source,
                "holds no signing key the server can use (\(skipped.isEmpty ? "no keys" : skipped.joined(separator: "; ")))"
            )
        }
        await collection.clearDefault()
        return Keys(collection: collection, algorithms: algorithms, needsKeyID: true, version: version, source: data)
    }

    /// Adds one JWK, pinned to its algorithm, and answers its `kid` and algorithm.
    private static func add(_ member: JSONValue, to collection: JWTKeyCollection) async throws -> (String, String) {
        guard case .object(let fields) = member else { throw KeyProblem("is not a JSON object") }
        guard case .string(let kid)? = fields["kid"], !kid.isEmpty else { throw KeyProblem("has no `kid`") }
        if case .string(let use)? = fields["use"], use != "sig" {
            throw KeyProblem("kid \(kid) is for `\(use)`, not `sig`")
        }
        guard let algorithm = pinnedAlgorithm(fields) else {
            throw KeyProblem("kid \(kid): no signing algorithm the server takes for this key type")
        }
        var jwk = try JSONDecoder().decode(JWK.self, from: JSONEncoder().encode(member))
        jwk.algorithm = JWK.Algorithm(rawValue: algorithm)
        do {
            try await collection.add(jwk: jwk)
        } catch {
            throw KeyProblem("kid \(kid): \(error)")
        }
        return (kid, algorithm)
    }

    /// A JWK's own `alg` when the server takes it, else the algorithm its type and curve imply
    /// (RSA keys without `alg` are taken as RS256, the algorithm identity providers publish them for).
    private static func pinnedAlgorithm(_ fields: [String: JSONValue]) -> String? {
        if case .string(let algorithm)? = fields["alg"] {
            return asymmetricAlgorithms.contains(algorithm) ? algorithm : nil
        }
        switch (fields["kty"], fields["crv"]) {
        case (.string("RSA"), _): return "RS256"
        case (.string("EC"), .string("P-256")): return "ES256"
        case (.string("EC"), .string("P-384")): return "ES384"
        case (.string("EC"), .string("P-521")): return "ES512"
        case (.string("OKP"), .string("Ed25519")): return "EdDSA"
        default: return nil
        }
    }

    private struct KeyProblem: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}
