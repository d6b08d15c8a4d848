import Foundation
import NIOConcurrencyHelpers
import SeedSyncClient
import SeedSyncDemo
import SeedSyncModel
import SeedSyncServer
import SeedSyncTesting
import Testing

/// Short-lived tokens: the client asks its provider again after a 401, once, and goes on where
/// it was.
@Suite struct TokenProviderTests {
    /// What a provider was asked: `renew` of each ask, in order.
    final class Asks: Sendable {
        private let asks = NIOLockedValueBox([Bool]())
        func record(_ renew: Bool) { asks.withLockedValue { $0.append(renew) } }
        var all: [Bool] { asks.withLockedValue { $0 } }
    }

    /// A served store taking HS256 JWTs without leeway, so a token expires when its `exp` says.
    func withJWTStore(_ body: @escaping @Sendable (ServedStore) async throws -> Void) async throws {
        try await withServedStore(configure: {
            $0.jwt = JWTConfiguration(keys: .secret(TestIdentityProvider.secret), leeway: .zero)
        }) {
            try await body($0)
        }
    }

    func client(_ served: ServedStore, _ tokens: TokenProvider) -> SyncClient {
        SyncClient(configuration: .init(serverURL: served.url, tokens: tokens, requestTimeout: 10, retry: .none))
    }

    /// A client whose provider records each ask in `asks` and mints a token living `lifetime(renew)` seconds.
    func client(
        _ served: ServedStore, recordingIn asks: Asks, _ lifetime: @escaping @Sendable (_ renew: Bool) -> TimeInterval
    ) async -> SyncClient {
        let provider = await TestIdentityProvider()
        return client(
            served,
            TokenProvider { renew in
                asks.record(renew)
                return try await provider.token(claims: TestIdentityProvider.claims(expiringIn: lifetime(renew)))
            })
    }

    /// `--token-file`'s provider: the file as it is at each ask, so a token renewed in place is taken up.
    @Test func aFileProviderReadsTheFileAtEachAsk() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("token").path
            let provider = TokenProvider.file(path)
            await #expect(throws: (any Error).self) { try await provider.token(renew: false) }
            try Data(" first\n".utf8).write(to: URL(fileURLWithPath: path))
            #expect(try await provider.token(renew: false) == "first")
            try Data("second".utf8).write(to: URL(fileURLWithPath: path))
            #expect(try await provider.token(renew: true) == "second")
            try Data("\n".utf8).write(to: URL(fileURLWithPath: path))
            #expect(try await provider.token(renew: true) == nil)
        }
    }

    @Test func aRefusedTokenIsRenewedOnceAndTheRequestSentAgain() async throws {
        try await withJWTStore { served in
            let asks = Asks()
            let client = await client(served, recordingIn: asks) { renew in renew ? 300 : -60 }
            let schema = try await client.schema()
            #expect(schema.revision > 0)
            #expect(asks.all == [false, true])
            _ = try await client.sync(from: schema.revision)
            #expect(asks.all == [false, true], "the renewed token is kept")
        }
    }

    @Test func aSecondRefusalIsReportedNotRetried() async throws {
        try await withJWTStore { served in
            let asks = Asks()
            let expired = await client(served, recordingIn: asks) { renew in renew ? -30 : -60 }
            let error = await #expect(throws: SyncClientError.self) { try await expired.schema() }
            #expect(error?.code == .unauthorized)
            #expect(error?.description.contains("expired at") == true)
            #expect(asks.all == [false, true])

            let before = try await answeredRequests("/v1/schema", on: served.url)
            let fixed = client(served, .fixed("not-a-token"))
            await #expect(throws: SyncClientError.self) { try await fixed.schema() }
            #expect(
                try await answeredRequests("/v1/schema", on: served.url) == before + 1,
                "the same token is not sent again")

            let failing = client(served, TokenProvider { _ in throw CancellationError() })
            let providerError = await #expect(throws: SyncClientError.self) { try await failing.schema() }
            #expect(providerError?.description.contains("the token provider gave no token") == true)
        }
    }

    /// Tokens of three seconds: a catch-up and a live request held past the expiry go on.
    @Test func aHeldRequestAndTheCatchUpAfterItOutliveTheTokensExpiry() async throws {
        try await withJWTStore { served in
            let asks = Asks()
            let client = await client(served, recordingIn: asks) { _ in 3 }
            let head = try await client.schema().revision
            let held = try await client.sync(from: head, wait: 4)
            #expect(held.maxRevision == head)
            try await ChangeGenerator.mutate(served.store, changes: 1, seed: 11)
            let caughtUp = try await client.sync(from: head)
            #expect(caughtUp.maxRevision > head)
            // At least the renewal after the hold; a loaded machine may take more than a token's three seconds
            // from one request to the next, and renew before the hold too.
            #expect(asks.all.first == false && asks.all.count >= 2 && asks.all.dropFirst().allSatisfy { $0 })
        }
    }
}
