import Crypto
import Foundation
import SeedSyncClient
import SeedSyncImport
import SeedSyncModel
import SeedSyncSeed
import SeedSyncTesting
import Testing

/// Change log answers that pass through a cache or a proxy: an origin with an answer key signs
/// each `GET /v1/changes` answer, and an app that trusts the key refuses one that was altered on
/// the way before anything of it is applied.
@Suite struct SignedAnswerTests {
    /// What a proxy does to the log answers it passes on.
    enum Tampering: String, CaseIterable, Sendable {
        /// A value of a change set changed.
        case altered
        /// The last change set dropped, `maxRevision` and the chains made to match.
        case dropped
        /// Two change sets swapped (their revisions kept in place).
        case reordered
        /// The signature removed.
        case unsigned

        func apply(to answer: ProxiedAnswer) throws -> ProxiedAnswer {
            guard answer.path == "/v1/changes", answer.status == 200 else { return answer }
            var changed = answer
            var json = try #require(try JSONSerialization.jsonObject(with: answer.body) as? [String: Any])
            var changeSets = try #require(json["changeSets"] as? [[String: Any]])
            guard changeSets.count >= 2 else { return answer }
            switch self {
            case .altered:
                let text = String(decoding: answer.body, as: UTF8.self)
                changed.body = Data(
                    text.replacingOccurrences(of: "\"cancelled\":false", with: "\"cancelled\":true").utf8)
                return changed
            case .dropped:
                changeSets.removeLast()
                json["maxRevision"] = changeSets.last!["revision"]
                json["chains"] = (json["chains"] as? [Any]).map { Array($0.dropLast()) }
                json["chain"] = (json["chains"] as? [Any])?.last
            case .reordered:
                let (first, second) = (changeSets[0], changeSets[1])
                changeSets[0] = second.merging(["revision": first["revision"]!]) { $1 }
                changeSets[1] = first.merging(["revision": second["revision"]!]) { $1 }
            case .unsigned:
                changed.headers["SeedSync-Signature"] = nil
                return changed
            }
            json["changeSets"] = changeSets
            changed.body = try JSONSerialization.data(withJSONObject: json)
            return changed
        }
    }

    @Test(arguments: Tampering.allCases)
    func aLogAnswerTamperedWithOnTheWayIsRefusedAndNothingApplied(_ tampering: Tampering) async throws {
        let key = Curve25519.Signing.PrivateKey()
        try await withImportFixture(changesAfter: 10, answerKey: key) { fixture in
            try await fixture.importer().run()
            try await fixture.mutate(12, seed: 31)
            let before = try contents(ofSeed: fixture.database)
            let revision = try revision(of: fixture.database)
            try await withAlteringProxy(to: fixture.served.url, alter: tampering.apply) { proxy in
                let error = await #expect(throws: (any Error).self, "\(tampering)") {
                    try await Self.importer(fixture, through: proxy, trusting: [key.publicKey]).run()
                }
                #expect("\(error.map { String(describing: $0) } ?? "")".contains("altered or replaced the answer"))
            }
            #expect(try contents(ofSeed: fixture.database) == before, "\(tampering): nothing applied")
            #expect(try self.revision(of: fixture.database) == revision)
            // Straight from the origin, the same app catches up.
            try await Self.importer(fixture, through: fixture.served.url, trusting: [key.publicKey]).run()
            #expect(try contents(ofSeed: fixture.database) == (try await fixture.serverContents()))
        }
    }

    /// The baseline of the test above: the proxy's change reaches an app that trusts no answer
    /// key, which then holds rows the server does not have.
    @Test func withoutAnAnswerKeyAnAlteredAnswerGoesThrough() async throws {
        let key = Curve25519.Signing.PrivateKey()
        try await withImportFixture(changesAfter: 10, answerKey: key) { fixture in
            try await fixture.importer().run()
            try await fixture.mutate(12, seed: 31)
            try await withAlteringProxy(to: fixture.served.url, alter: Tampering.altered.apply) { proxy in
                try await Self.importer(fixture, through: proxy, trusting: []).run()
            }
            #expect(try contents(ofSeed: fixture.database) != (try await fixture.serverContents()))
        }
    }

    /// An answer signed by a key the app does not trust, and an honest proxy with the right key.
    @Test func onlyATrustedKeysSignaturePasses() async throws {
        let key = Curve25519.Signing.PrivateKey()
        let other = Curve25519.Signing.PrivateKey()
        try await withImportFixture(changesAfter: 10, answerKey: key) { fixture in
            try await fixture.importer().run()
            try await fixture.mutate(12, seed: 31)
            await #expect {
                try await Self.importer(fixture, through: fixture.served.url, trusting: [other.publicKey]).run()
            } throws: {
                "\($0)".contains("which is not trusted")
            }
            try await withAlteringProxy(to: fixture.served.url, alter: { $0 }) { proxy in
                // Key rotation: the old and the new key trusted at once.
                try await Self.importer(fixture, through: proxy, trusting: [other.publicKey, key.publicKey]).run()
            }
            #expect(try contents(ofSeed: fixture.database) == (try await fixture.serverContents()))
        }
    }

    /// A signature covers the address as the request gave it, `limit` and `scopes` included: a
    /// team's reader naming its values, with and without a limit, passes with the key, and an
    /// answer checked at another address does not. The key's id is the one `seed-verify` names.
    @Test func aTeamsAddressAndALimitedReadAreSignedAsAsked() async throws {
        let key = Curve25519.Signing.PrivateKey()
        try await ScopedImportTests.withTeams(.sqlite, answerKey: key) { _, url, _ in
            var configuration = SyncClient.Configuration(
                serverURL: url, token: try await TestIdentityProvider.teamToken([1]), requestTimeout: 10,
                retry: .none)
            configuration.answerKeys = [key.publicKey]
            let client = SyncClient(configuration: configuration)
            let version = try await client.schema().schemaVersion
            let team = ScopeList([.int(1)])
            let whole = try await client.changes(after: 0, schemaVersion: version, scopes: team)
            #expect(!whole.changeSets.isEmpty)
            let limited = try await client.changes(after: 0, schemaVersion: version, limit: 1, scopes: team)
            #expect(limited.changeSets.count == 1)
        }
        let body = Data(#"{"maxRevision":4,"hasMore":true,"changeSets":[]}"#.utf8)
        let header = try AnswerSignature.header(signing: body, at: "after=3&schemaVersion=1", with: key)
        try AnswerSignature.check(header, of: body, at: "after=3&schemaVersion=1", keys: [key.publicKey], label: "a")
        #expect(throws: SyncClientError.self) {
            try AnswerSignature.check(
                header, of: body, at: "after=2&schemaVersion=1", keys: [key.publicKey], label: "b")
        }
        let named = try SeedPublicKey(key.publicKey.rawRepresentation.base64EncodedString())
        #expect(AnswerSignature.keyID(key.publicKey) == named.id)
    }

    static func importer(_ fixture: ImportFixture, through url: URL, trusting keys: [Curve25519.Signing.PublicKey])
        -> SeedImporter
    {
        var configuration = fixture.importer().configuration
        configuration.server.serverURL = url
        configuration.server.answerKeys = keys
        return SeedImporter(configuration: configuration)
    }

    func revision(of database: String) throws -> Int64 {
        try SeedSyncImportTests.revision(of: database)
    }
}
