import Foundation
import SeedSyncBuild
import SeedSyncDemo
import SeedSyncModel
import SeedSyncSeed
import SeedSyncTesting
import Testing

/// Signed manifests: `seed-build` signs, `seed-verify --trust` and ``TrustedKeys`` check, each
/// refusal with its own code and message.
@Suite struct SeedSigningTests {
    static let current = SeedSigningKey()
    static let next = SeedSigningKey()

    /// Builds a demo seed (and its `.gz`) signed by `keys` and hands its path to `body`.
    func withSeed(
        signedBy keys: [SeedSigningKey], events: Int = 200,
        _ body: @escaping @Sendable (String, ServedStore) async throws -> Void
    ) async throws {
        try await withServedStore(events: events, changes: 5) { served in
            let report = try await served.builder("seed/demo.sqlite", gzip: true, signingKeys: keys).build()
            try await body(report.output, served)
        }
    }

    func signatureCheck(_ seed: String, trusting keys: [SeedPublicKey]) async throws -> VerificationReport.Check? {
        let report = try await SeedVerifier.verify(seed, options: .init(trustedKeys: TrustedKeys(keys)))
        return report.checks.first { $0.name == "signature" }
    }

    /// The code `TrustedKeys` refuses the manifest beside `seed` with, or `nil` when it accepts it.
    func refusal(_ seed: String, trusting keys: [SeedPublicKey]) throws -> SeedError.Code? {
        do {
            _ = try TrustedKeys(keys).readManifest(at: SeedManifest.path(forSeed: seed), of: seed)
            return nil
        } catch let error as SeedError {
            return error.code
        }
    }

    @Test func aSignedSeedVerifiesWithItsKeyPlainAndCompressed() async throws {
        try await withSeed(signedBy: [Self.current]) { seed, _ in
            let manifest = try SeedManifest.read(from: SeedManifest.path(forSeed: seed))
            #expect(manifest.signatures?.map(\.key) == [Self.current.publicKey.id])
            for file in [seed, seed + ".gz"] {
                let report = try await SeedVerifier.verify(
                    file, options: .init(trustedKeys: TrustedKeys([Self.current.publicKey])))
                #expect(report.passed, "\(report.failures)")
                let check = try #require(report.checks.first { $0.name == "signature" })
                #expect(check.status == .passed && check.detail.contains(Self.current.publicKey.id))
            }
            // Without trusted keys the check is skipped and says who signed.
            let untrusted = try await SeedVerifier.verify(seed)
            #expect(untrusted.passed)
            let skipped = try #require(untrusted.checks.first { $0.name == "signature" })
            #expect(skipped.status == .skipped && skipped.detail.contains(Self.current.publicKey.id))
        }
    }

    @Test func anUnsignedSeedIsRefusedWhenKeysAreTrusted() async throws {
        try await withSeed(signedBy: []) { seed, _ in
            #expect(try refusal(seed, trusting: [Self.current.publicKey]) == .unsigned)
            #expect(try refusal(seed, trusting: []) == nil)
            let check = try #require(try await signatureCheck(seed, trusting: [Self.current.publicKey]))
            #expect(check.status == .failed && check.detail.contains("is not signed"), "\(check.detail)")
            // No manifest at all is unsigned too.
            try FileManager.default.removeItem(atPath: SeedManifest.path(forSeed: seed))
            #expect(try refusal(seed, trusting: [Self.current.publicKey]) == .unsigned)
            let missing = try #require(try await signatureCheck(seed, trusting: [Self.current.publicKey]))
            #expect(missing.status == .failed)
        }
    }

    @Test func aSeedSignedByAnotherKeyIsRefusedByName() async throws {
        try await withSeed(signedBy: [Self.next]) { seed, _ in
            #expect(try refusal(seed, trusting: [Self.current.publicKey]) == .untrustedKey)
            let check = try #require(try await signatureCheck(seed, trusting: [Self.current.publicKey]))
            #expect(check.status == .failed, "\(check.detail)")
            #expect(
                check.detail.contains("unknown key") && check.detail.contains(Self.next.publicKey.id)
                    && check.detail.contains(Self.current.publicKey.id), "\(check.detail)")
        }
    }

    /// Any change to a signed member, or to the signature, fails; so does a signature moved to
    /// another manifest. Re-formatting the JSON (spaces, member order) does not.
    @Test func aChangedManifestOrSignatureFailsTheSignature() async throws {
        try await withSeed(signedBy: [Self.current]) { seed, _ in
            let path = SeedManifest.path(forSeed: seed)
            let original = try Data(contentsOf: URL(fileURLWithPath: path))
            let trusted = [Self.current.publicKey]
            var object = try #require(try JSONSerialization.jsonObject(with: original) as? [String: Any])
            try JSONSerialization.data(withJSONObject: object).write(to: URL(fileURLWithPath: path))
            #expect(try refusal(seed, trusting: trusted) == nil, "compact JSON signs the same")

            object["revision"] = (object["revision"] as! Int) + 1
            try JSONSerialization.data(withJSONObject: object).write(to: URL(fileURLWithPath: path))
            #expect(try refusal(seed, trusting: trusted) == .badSignature)
            let check = try #require(try await signatureCheck(seed, trusting: trusted))
            #expect(check.status == .failed && check.detail.contains("wrong signature"), "\(check.detail)")

            object["revision"] = (object["revision"] as! Int) - 1
            object["servedFrom"] = "an added member"
            try JSONSerialization.data(withJSONObject: object).write(to: URL(fileURLWithPath: path))
            #expect(try refusal(seed, trusting: trusted) == .badSignature, "an unknown member is signed too")

            object["servedFrom"] = nil
            var signature = (object["signatures"] as! [[String: String]])[0]
            var bytes = [UInt8](Data(base64Encoded: signature["ed25519"]!)!)
            bytes[10] ^= 0x01
            signature["ed25519"] = Data(bytes).base64EncodedString()
            object["signatures"] = [signature]
            try JSONSerialization.data(withJSONObject: object).write(to: URL(fileURLWithPath: path))
            #expect(try refusal(seed, trusting: trusted) == .badSignature)
        }
    }

    /// A seed signed by the old and the new key verifies for apps that trust either; one signed
    /// by the new key alone, for apps that trust both. A bad signature by a trusted key refuses
    /// the manifest even when another verifies.
    @Test func rotatedKeysVerifyWhileBothAreTrusted() async throws {
        try await withSeed(signedBy: [Self.current, Self.next]) { seed, _ in
            let (current, next) = (Self.current.publicKey, Self.next.publicKey)
            #expect(try refusal(seed, trusting: [current]) == nil)
            #expect(try refusal(seed, trusting: [next]) == nil)
            #expect(try refusal(seed, trusting: [next, current]) == nil)
            let path = SeedManifest.path(forSeed: seed)
            var manifest = try SeedManifest.read(from: path)
            manifest.signatures![1].ed25519 = manifest.signatures![0].ed25519
            try manifest.jsonData().write(to: URL(fileURLWithPath: path))
            #expect(try refusal(seed, trusting: [current]) == nil, "the old key's signature alone is checked")
            #expect(try refusal(seed, trusting: [current, next]) == .badSignature)
            try manifest.signed(with: [Self.next]).jsonData().write(to: URL(fileURLWithPath: path))
            #expect(try refusal(seed, trusting: [current, next]) == nil)
            #expect(try refusal(seed, trusting: [current]) == .untrustedKey)
        }
    }

    /// A genuine signed manifest beside another seed: the signature verifies, the file does not
    /// match what it signs.
    @Test func aManifestSignedForAnotherFileFailsTheManifestCheck() async throws {
        try await withSeed(signedBy: [Self.current]) { seed, served in
            _ = try await ChangeGenerator.mutate(served.store, changes: 3, seed: 9)
            let newer = try await served.builder("newer/demo.sqlite").build().output
            try FileManager.default.removeItem(atPath: SeedManifest.path(forSeed: newer))
            try FileManager.default.copyItem(
                atPath: SeedManifest.path(forSeed: seed), toPath: SeedManifest.path(forSeed: newer))
            let report = try await SeedVerifier.verify(
                newer, options: .init(trustedKeys: TrustedKeys([Self.current.publicKey])))
            #expect(report.failures.map(\.name) == ["manifest"], "\(report.checks)")
            #expect(report.checks.first { $0.name == "signature" }?.status == .passed)
        }
    }

    @Test func keysReadBackFromPEMAndBase64() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("keys/seeds.pem").path
            try FileManager.default.createDirectory(
                atPath: directory.appendingPathComponent("keys").path, withIntermediateDirectories: true)
            let key = SeedSigningKey()
            try key.write(to: path)
            let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
            #expect(mode == 0o600)
            #expect(try SeedSigningKey.read(from: path).publicKey == key.publicKey)
            let publicPath = SeedSigningKey.publicKeyPath(for: path)
            #expect(publicPath.hasSuffix("keys/seeds.pub.pem"))
            #expect(try SeedPublicKey.resolve(publicPath) == key.publicKey)
            #expect(try SeedPublicKey.resolve(key.publicKey.base64) == key.publicKey)
            #expect(throws: SeedError.self) { try key.write(to: path) }
            #expect(!"\(key)".contains("PRIVATE"))
            #expect(!key.publicKey.pemRepresentation.contains("PRIVATE"))
            let invalid = #expect(throws: SeedError.self) { try SeedPublicKey.resolve("not-a-key") }
            #expect(invalid?.code == .invalidKey)
            let secret = key.pemRepresentation
            let wrong = #expect(throws: SeedError.self) {
                try SeedSigningKey(pem: String(secret.dropLast(20)))
            }
            #expect(wrong?.code == .invalidKey && !(wrong?.description.contains(secret.prefix(40)) ?? true))
        }
    }
}
