import Foundation
import Hummingbird
import HummingbirdTesting
import SeedSyncDemo
import SeedSyncModel
import SeedSyncServer
import SeedSyncStore
import SeedSyncTesting
import Testing

/// Snapshot pages as answers caches may keep, on every store: kept by the server for their
/// lifetime with the revision they were read at, read afresh for a `notBefore` after it, their
/// cache headers and entity tags.
@Suite struct SnapshotRouteTests {
    /// A store of 60 events at revision 1: one page of `limit=1000` holds them all, so any commit
    /// changes what a fresh read of it says.
    /// A lifetime no test run outlasts, however loaded the machine: what a kept page says is then
    /// `max-age` within a minute of it.
    static let hour = Duration.seconds(3_600)

    func withApp(
        _ change: (inout ServerConfiguration) -> Void = { _ in },
        _ test: @escaping @Sendable (any TestClientProtocol, any MaintainedSyncStore) async throws -> Void
    ) async throws {
        let configuration = testConfiguration {
            $0.snapshotMaxAge = Self.hour
            change(&$0)
        }
        for backend in StoreBackend.tested {
            try await backend.withDemoStore(events: 60, locations: 10) { store in
                let app = try await buildApplication(store: store, configuration: configuration)
                try await app.test(.router) { client in try await test(client, store) }
            }
        }
    }

    @Test func aPageIsServedAsReadForItsLifetime() async throws {
        try await withApp { client, store in
            let first = try await Self.page(client, "events?limit=1000&notBefore=1")
            #expect(first.message.revision == 1)
            #expect(Self.maxAge(first) ?? 0 > 3_540)
            try await ChangeGenerator.mutate(store, changes: 3, seed: 5)
            let kept = try await Self.page(client, "events?limit=1000&notBefore=1")
            #expect(kept.body == first.body && kept.eTag == first.eTag)
            // A client that must not start before the newest revision gets a page read now ...
            let newest = try await store.revisions().revision
            let fresh = try await Self.page(client, "events?limit=1000&notBefore=\(newest)")
            #expect(fresh.message.revision == newest)
            let now = try await store.snapshotPageJSON(of: "events", after: nil, limit: 1000, version: 1, fields: nil)
            #expect(fresh.body == String(decoding: now, as: UTF8.self))
            // ... which is kept in its turn, for everyone.
            #expect(try await Self.page(client, "events?limit=1000&notBefore=1").body == fresh.body)
        }
    }

    /// A request without `notBefore` may come from a client that catches up from a revision read
    /// before its first page (as any could before pages were kept): it gets a page read after it
    /// arrived, which no cache may keep.
    @Test func withoutNotBeforeAPageIsReadAfterTheRequest() async throws {
        try await withApp { client, store in
            let kept = try await Self.page(client, "events?limit=1000&notBefore=1")
            try await ChangeGenerator.mutate(store, changes: 3, seed: 5)
            let plain = try await Self.page(client, "events?limit=1000")
            #expect(plain.message.revision == (try await store.revisions().revision))
            #expect(plain.cacheControl == "private, max-age=0")
            #expect(plain.body != kept.body)
            // Its read is kept for the clients that name notBefore.
            #expect(try await Self.page(client, "events?limit=1000&notBefore=1").body == plain.body)
        }
    }

    @Test func aLifetimeOfZeroReadsEveryPage() async throws {
        try await withApp({ $0.snapshotMaxAge = .zero }) { client, store in
            let first = try await Self.page(client, "events?limit=1000&notBefore=1")
            #expect(first.cacheControl == "private, max-age=0")
            try await ChangeGenerator.mutate(store, changes: 3, seed: 5)
            let again = try await Self.page(client, "events?limit=1000&notBefore=1")
            #expect(again.message.revision == (try await store.revisions().revision))
            #expect(again.eTag != first.eTag)
        }
    }

    /// A kept page is served for its lifetime from its read, no longer.
    @Test func aKeptPageAgesOut() async throws {
        try await withApp({ $0.snapshotMaxAge = .seconds(1) }) { client, store in
            let first = try await Self.page(client, "events?limit=1000&notBefore=1")
            #expect(Self.maxAge(first) ?? 2 <= 1)
            try await ChangeGenerator.mutate(store, changes: 3, seed: 5)
            try await Task.sleep(for: .milliseconds(1_100))
            let again = try await Self.page(client, "events?limit=1000&notBefore=1")
            #expect(again.message.revision == (try await store.revisions().revision))
        }
    }

    /// Everything of an address but `notBefore` names the page: other fields, keys, limits or
    /// versions are other pages.
    @Test func pagesAreKeptByTheirWholeAddress() async throws {
        try await withApp { client, store in
            for address in [
                "events?limit=1000", "events?limit=1000&fields=title", "events?limit=1000&after=30", "events?limit=7",
                "locations?limit=1000", "events?limit=1000&schemaVersion=1",
            ] {
                _ = try await Self.page(client, address + "&notBefore=1")
            }
            let titles = try await Self.page(client, "events?limit=1000&fields=title&notBefore=1")
            #expect(titles.message.columns == ["id", "title", "revision"])
            let tail = try await Self.page(client, "events?limit=7&after=30&notBefore=1")
            #expect(tail.message.rows.first?.first == .int(31) && tail.message.rows.count == 7)
            let whole = try await Self.page(client, "events?limit=1000&notBefore=1")
            let expected = try await store.snapshotPageJSON(
                of: "events", after: nil, limit: 1000, version: 1, fields: nil)
            #expect(whole.body == String(decoding: expected, as: UTF8.self))
        }
    }

    @Test func entityTagsAndSharedCaches() async throws {
        try await withApp({ $0.sharedCache = true }) { client, _ in
            let first = try await Self.page(client, "events?limit=1000&notBefore=1")
            #expect(first.cacheControl?.hasPrefix("public, max-age=") == true && Self.maxAge(first) ?? 0 > 3_540)
            let tag = try #require(first.eTag)
            #expect(tag.count == 34)
            try await client.execute(
                uri: "/v1/snapshot/events?limit=1000&notBefore=1", method: .get,
                headers: headers(token: TestTokens.read, [.ifNoneMatch: tag])
            ) { response in
                #expect(response.status == .notModified)
                #expect(response.body.readableBytes == 0)
                #expect(response.headers[.eTag] == tag)
                #expect(response.headers[.cacheControl]?.hasPrefix("public, max-age=") == true)
            }
        }
    }

    @Test func badRevisionsAreRefused() async throws {
        try await withApp { client, _ in
            for (query, status, code) in [
                ("notBefore=-1", HTTPResponse.Status.badRequest, "invalid_parameter"),
                ("notBefore=x", .badRequest, "invalid_parameter"),
                ("notBefore=2", .conflict, "revision_ahead"),
            ] {
                try await client.execute(uri: "/v1/snapshot/events?\(query)", method: .get, headers: headers()) {
                    response in
                    #expect(response.status == status, "\(query)")
                    #expect(errorCode(response) == code, "\(query)")
                    #expect(response.headers[.cacheControl] == nil, "\(query)")
                }
            }
        }
    }

    /// The seconds of an answer's `Cache-Control: private|public, max-age=N`.
    private static func maxAge(_ answer: CacheableAnswer<SnapshotPage>) -> Int? {
        answer.cacheControl?.split(separator: "max-age=").last.flatMap { Int($0) }
    }

    private static func page(_ client: any TestClientProtocol, _ address: String) async throws
        -> CacheableAnswer<SnapshotPage>
    {
        try await cacheableAnswer(client, "/v1/snapshot/\(address)") { try SnapshotPage(json: $0) }
    }
}
