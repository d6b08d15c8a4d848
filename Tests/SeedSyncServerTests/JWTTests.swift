import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import NIOConcurrencyHelpers
import NIOCore
import SeedSyncModel
import SeedSyncSQLiteStore
import SeedSyncServer
import SeedSyncStore
import SeedSyncTesting
import Testing

/// JWTs from an identity provider, beside static tokens: what they grant, and every way one is
/// refused (with 401 and the reason).
@Suite struct JWTTests {
    /// Now, read afresh at each use: a loaded machine may take tens of seconds over one test.
    static var now: Int64 { Int64(Date().timeIntervalSince1970) }

    /// A server taking JWTs of `jwt` and the static test tokens, with `body` given a client.
    func withJWTServer(
        _ jwt: JWTConfiguration, _ body: @escaping @Sendable (any TestClientProtocol, Int64) async throws -> Void
    ) async throws {
        try await withTemporaryDirectory { directory in
            let store = try await Fixtures.demoStore(events: 20, locations: 3, in: directory)
            let revision = try await store.revisions().revision
            let app = try await buildApplication(store: store, configuration: testConfiguration { $0.jwt = jwt })
            try await app.test(.live) { client in try await body(client, revision) }
        }
    }

    /// A key set file of `provider`'s keys `kids`, in `directory`.
    func keySetFile(_ provider: TestIdentityProvider, _ kids: [String]? = nil, in directory: URL) throws -> String {
        let path = directory.appendingPathComponent("jwks.json").path
        try Data(provider.keySet(kids).utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test func aKeySetTokenReadsAndItsRoleClaimDecidesWhetherItPushes() async throws {
        let provider = await TestIdentityProvider(kids: ["k1", "k2"])
        try await withTemporaryDirectory { directory in
            var jwt = JWTConfiguration(keys: .keySetFile(try keySetFile(provider, in: directory)))
            jwt.roleClaim = "app_metadata.seedsync.role"
            try await withJWTServer(jwt) { client, revision in
                let writer = try await provider.token(
                    kid: "k2",
                    claims: TestIdentityProvider.claims([
                        "app_metadata": .object(["seedsync": .object(["role": "write"])])
                    ]))
                let reader = try await provider.token(
                    kid: "k1",
                    claims: TestIdentityProvider.claims([
                        "app_metadata": .object(["seedsync": .object(["role": .array(["read"])])])
                    ]))
                for token in [writer, reader] {
                    let schema = try await client.execute(
                        uri: "/v1/schema", method: .get, headers: headers(token: token))
                    #expect(schema.status == .ok)
                }
                let push = #"{"maxRevision": \#(revision), "changeSets": [{"id": "jwt-push", "types": []}]}"#
                let pushed = try await client.execute(
                    uri: "/v1/sync", method: .post, headers: headers(token: writer), body: body(push))
                #expect(pushed.status == .ok)
                let refused = try await client.execute(
                    uri: "/v1/sync", method: .post, headers: headers(token: reader), body: body(push))
                #expect(refused.status == .forbidden)
                // Admin stays with static tokens; static tokens keep working beside JWTs.
                let metrics = try await client.execute(uri: "/metrics", method: .get, headers: headers(token: writer))
                #expect(metrics.status == .forbidden)
                let admin = try await client.execute(
                    uri: "/metrics", method: .get, headers: headers(token: TestTokens.admin))
                #expect(admin.status == .ok)
                let staticRead = try await client.execute(uri: "/v1/schema", method: .get, headers: headers())
                #expect(staticRead.status == .ok)
            }
        }
    }

    /// One refused token: what it is, and a fragment of the reason the 401 must give.
    struct Refused: Sendable, CustomStringConvertible {
        let description: String
        let token: String
        let reason: String
    }

    @Test func everyBadTokenIsRefusedWith401AndItsReason() async throws {
        let provider = await TestIdentityProvider(kids: ["k1"])
        let stranger = await TestIdentityProvider(kids: ["k1", "k9"])
        let valid = TestIdentityProvider.claims(["aud": .array(["other", "sync"]), "iss": "https://id.example"])
        @Sendable func claims(_ changes: [String: JSONValue]) -> [String: JSONValue] {
            valid.merging(changes) { _, new in new }
        }
        var withoutExpiry = valid
        withoutExpiry["exp"] = nil
        let refused: [Refused] = [
            Refused(
                description: "expired",
                token: try await provider.token(kid: "k1", claims: claims(["exp": .int(Self.now - 120)])),
                reason: "expired at"),
            Refused(
                description: "not yet valid",
                token: try await provider.token(kid: "k1", claims: claims(["nbf": .int(Self.now + 120)])),
                reason: "not valid before"),
            Refused(
                description: "signed by another key under the same kid",
                token: try await stranger.token(kid: "k1", claims: valid), reason: "signature does not verify"),
            Refused(
                description: "an unknown kid", token: try await stranger.token(kid: "k9", claims: valid),
                reason: "\"k9\" is not in the server's key set"),
            Refused(
                description: "no kid", token: try await TestIdentityProvider().token(claims: valid),
                reason: "names no key"),
            Refused(
                description: "alg none",
                token: TestIdentityProvider.forged(header: ["alg": "none", "kid": "k1"], claims: valid),
                reason: "alg \"none\" is not one the server takes"),
            Refused(
                description: "HS256 with the public key's kid",
                token: TestIdentityProvider.forged(
                    header: ["alg": "HS256", "kid": "k1"], claims: valid, signature: "abc"),
                reason: "its key is for ES256"),
            Refused(
                description: "a critical extension",
                token: TestIdentityProvider.forged(
                    header: ["alg": "ES256", "kid": "k1", "crit": .array(["exp"])], claims: valid),
                reason: "critical extensions"),
            Refused(
                description: "the wrong audience",
                token: try await provider.token(kid: "k1", claims: claims(["aud": "other"])),
                reason: "audience (`aud`) does not include sync"),
            Refused(
                description: "no audience", token: try await provider.token(kid: "k1", claims: claims(["aud": .null])),
                reason: "audience (`aud`) does not include sync"),
            Refused(
                description: "the wrong issuer",
                token: try await provider.token(kid: "k1", claims: claims(["iss": "https://evil.example"])),
                reason: "issuer (`iss`) is not https://id.example"),
            Refused(
                description: "no expiry", token: try await provider.token(kid: "k1", claims: withoutExpiry),
                reason: "has no `exp`"),
            Refused(
                description: "an expiry that is not a number",
                token: try await provider.token(kid: "k1", claims: claims(["exp": "tomorrow"])),
                reason: "`exp` is a string"),
            Refused(description: "not a JWT", token: "not-a-known-token", reason: "nor a JWT"),
            Refused(description: "three parts of garbage", token: "a.b.c", reason: "nor a JWT"),
        ]
        try await withTemporaryDirectory { directory in
            let jwt = JWTConfiguration(
                keys: .keySetFile(try keySetFile(provider, in: directory)), issuer: "https://id.example",
                audience: "sync")
            try await withJWTServer(jwt) { client, _ in
                for refusal in refused {
                    let response = try await client.execute(
                        uri: "/v1/schema", method: .get, headers: headers(token: refusal.token))
                    #expect(response.status == .unauthorized, "\(refusal)")
                    let error = try? decode(ErrorResponse.self, response).error
                    #expect(error?.code == "unauthorized", "\(refusal)")
                    #expect(
                        error?.message.contains(refusal.reason) == true, "\(refusal): \(error?.message ?? "no body")")
                    #expect(response.headers[.wwwAuthenticate]?.hasPrefix("Bearer error=\"invalid_token\"") == true)
                }
                // /metrics counts each refusal by its reason.
                let metrics = try await client.execute(
                    uri: "/metrics", method: .get, headers: headers(token: TestTokens.admin))
                let text = String(buffer: metrics.body)
                for (reason, count) in [
                    ("expired", 1), ("unknown_token", 2), ("wrong_party", 3), ("claim", 2), ("algorithm", 2),
                ] {
                    #expect(
                        text.contains("seedsync_token_refusals_total{reason=\"\(reason)\"} \(count)\n"), "\(reason)")
                }
                // Within the leeway, a token just expired or not quite valid yet is taken.
                for nearly in [claims(["exp": .int(Self.now - 10)]), claims(["nbf": .int(Self.now + 10)])] {
                    let token = try await provider.token(kid: "k1", claims: nearly)
                    let response = try await client.execute(
                        uri: "/v1/schema", method: .get, headers: headers(token: token))
                    #expect(response.status == .ok)
                }
            }
        }
    }

    @Test func anHS256SecretServesWithoutKeyIDs() async throws {
        let provider = await TestIdentityProvider()
        try await withJWTServer(JWTConfiguration(keys: .secret(TestIdentityProvider.secret), role: .write)) {
            client, revision in
            let token = try await provider.token(claims: TestIdentityProvider.claims())
            let push = #"{"maxRevision": \#(revision), "changeSets": [{"id": "hs", "types": []}]}"#
            let pushed = try await client.execute(
                uri: "/v1/sync", method: .post, headers: headers(token: token), body: body(push))
            #expect(pushed.status == .ok)
            let forgedKey = await TestIdentityProvider(secret: "another secret for tests, longer than thirty-two bytes")
            let forged = try await forgedKey.token(claims: TestIdentityProvider.claims())
            let refused = try await client.execute(uri: "/v1/schema", method: .get, headers: headers(token: forged))
            #expect(refused.status == .unauthorized)
        }
    }

    @Test func keysThatCannotBeUsedStopTheServerFromStarting() async throws {
        try await withTemporaryDirectory { directory in
            let store = try await Fixtures.demoStore(events: 5, locations: 2, in: directory)
            let notAKeySet = directory.appendingPathComponent("not.json")
            try Data(#"{"kids": []}"#.utf8).write(to: notAKeySet)
            let encryptionOnly = directory.appendingPathComponent("enc.json")
            try Data(#"{"keys": [{"kty": "RSA", "use": "enc", "kid": "e", "n": "AQAB", "e": "AQAB"}]}"#.utf8)
                .write(to: encryptionOnly)
            let cases: [(JWTConfiguration.Keys, KeySetError.Code)] = [
                (.secret("short"), .weakSecret),
                (.keySetFile(directory.appendingPathComponent("missing.json").path), .unreadable),
                (.keySetFile(notAKeySet.path), .malformed),
                (.keySetFile(encryptionOnly.path), .malformed),
                (.keySetURL(URL(string: "http://127.0.0.1:9/jwks.json")!), .unreadable),
            ]
            for (keys, code) in cases {
                let error = await #expect(throws: KeySetError.self) {
                    _ = try await buildApplication(
                        store: store, configuration: testConfiguration { $0.jwt = JWTConfiguration(keys: keys) })
                }
                #expect(error?.code == code, "\(keys)")
            }
            // A key set URL that answers, but not with a key set the server may take: its status and size limit.
            let router = Router()
            router.get("missing") { _, _ -> Response in Response(status: .notFound) }
            router.get("huge") { _, _ in String(repeating: " ", count: (1 << 20) + 1) + #"{"keys": []}"# }
            let identity = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
            try await identity.test(.live) { keyServer in
                for (path, reason) in [("missing", "answered HTTP 404"), ("huge", "answered more than 1048576 bytes")] {
                    let url = URL(string: "http://127.0.0.1:\(keyServer.port!)/\(path)")!
                    let error = await #expect(throws: KeySetError.self) {
                        _ = try await buildApplication(
                            store: store,
                            configuration: testConfiguration { $0.jwt = JWTConfiguration(keys: .keySetURL(url)) })
                    }
                    #expect(error?.code == .unreadable)
                    #expect(error?.reason.contains(reason) == true, "\(path): \(error?.reason ?? "no error")")
                }
            }
        }
    }

    /// Rotation at the identity provider: a token naming a key the server has not read yet makes
    /// it read the key set URL again (once for a crowd of such tokens), and a key withdrawn from
    /// the set stops being accepted, cached grants included.
    @Test func aRotatedKeySetIsTakenUpFromTheURL() async throws {
        let provider = await TestIdentityProvider(kids: ["old", "new"])
        let served = NIOLockedValueBox(provider.keySet(["old"]))
        let reads = NIOLockedValueBox(0)
        let router = Router()
        router.get("jwks.json") { _, _ in
            reads.withLockedValue { $0 += 1 }
            return served.withLockedValue { $0 }
        }
        let identity = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await identity.test(.live) { keyServer in
            var jwt = JWTConfiguration(keys: .keySetURL(URL(string: "http://127.0.0.1:\(keyServer.port!)/jwks.json")!))
            jwt.refreshInterval = .seconds(3_600)
            jwt.minimumRefetchInterval = .seconds(1)
            try await withJWTServer(jwt) { client, _ in
                let old = try await provider.token(kid: "old", claims: TestIdentityProvider.claims())
                let new = try await provider.token(kid: "new", claims: TestIdentityProvider.claims())
                let cached = try await client.execute(uri: "/v1/schema", method: .get, headers: headers(token: old))
                #expect(cached.status == .ok)
                try await Task.sleep(for: .milliseconds(1_100))
                // A crowd naming an unknown kid: one reading, which does not hold it either.
                let started = ContinuousClock.now
                let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                    for _ in 0..<8 {
                        group.addTask {
                            try await client.execute(uri: "/v1/schema", method: .get, headers: headers(token: new))
                                .status
                        }
                    }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                #expect(statuses.allSatisfy { $0 == .unauthorized })
                let elapsed = started.duration(to: .now)
                #expect(
                    reads.withLockedValue { $0 } == 2 || elapsed > .seconds(1),
                    "one reading at start, one for the crowd")
                served.withLockedValue { $0 = provider.keySet(["new"]) }
                try await Task.sleep(for: .milliseconds(1_100))
                let taken = try await client.execute(uri: "/v1/schema", method: .get, headers: headers(token: new))
                #expect(taken.status == .ok)
                // That reading dropped the old key: its grant, cached before, is not served.
                let withdrawn = try await client.execute(uri: "/v1/schema", method: .get, headers: headers(token: old))
                #expect(withdrawn.status == .unauthorized)
            }
        }
    }

    /// A key set file is read again every refresh interval, without a token asking: a key
    /// withdrawn from it stops being accepted although no token names an unknown key.
    @Test func aKeySetFileIsReadAgainEveryRefreshInterval() async throws {
        let provider = await TestIdentityProvider(kids: ["a", "b"])
        try await withTemporaryDirectory { directory in
            let path = try keySetFile(provider, in: directory)
            var jwt = JWTConfiguration(keys: .keySetFile(path))
            jwt.refreshInterval = .milliseconds(200)
            try await withJWTServer(jwt) { client, _ in
                let token = try await provider.token(kid: "a", claims: TestIdentityProvider.claims())
                #expect(
                    try await client.execute(uri: "/v1/schema", method: .get, headers: headers(token: token)).status
                        == .ok)
                try Data(provider.keySet(["b"]).utf8).write(to: URL(fileURLWithPath: path))
                var status = HTTPResponse.Status.ok
                for _ in 0..<300 where status == .ok {
                    try await Task.sleep(for: .milliseconds(100))
                    status = try await client.execute(uri: "/v1/schema", method: .get, headers: headers(token: token))
                        .status
                }
                #expect(status == .unauthorized)
            }
        }
    }
}
