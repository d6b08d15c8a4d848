import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import SeedSyncDemo
import SeedSyncModel
import SeedSyncServer
import SeedSyncStore
import SeedSyncTesting
import Testing

/// `GET /v1/changes` on every store: blocks, final and head answers, their cache headers and
/// entity tags, and answers that stay the same bytes while the log grows.
@Suite struct ChangesRouteTests {
    /// A store at revision 11 (the demo load at 1, then 10 commits), served with blocks of 4
    /// revisions: 1-4, 5-8, 9-12.
    func withApp(
        _ change: (inout ServerConfiguration) -> Void = { _ in },
        _ test: @escaping @Sendable (any TestClientProtocol, any MaintainedSyncStore) async throws -> Void
    ) async throws {
        let configuration = testConfiguration { configuration in
            configuration.changesBlockSize = 4
            change(&configuration)
        }
        for backend in StoreBackend.tested {
            try await backend.withDemoStore(events: 60, locations: 10) { store in
                try await ChangeGenerator.mutate(store, changes: 10, seed: 2)
                let app = try await buildApplication(store: store, configuration: configuration)
                try await app.test(.router) { client in try await test(client, store) }
            }
        }
    }

    @Test func answersEndAtTheirBlockAndAreFinalThere() async throws {
        try await withApp { client, _ in
            let first = try await Self.changes(client, "after=1&schemaVersion=1")
            #expect(first.message.changeSets.compactMap(\.revision) == [2, 3, 4])
            #expect(first.message.maxRevision == 4)
            #expect(first.message.hasMore)
            #expect(first.cacheControl == "private, max-age=31536000, immutable")
            let second = try await Self.changes(client, "after=4&schemaVersion=1")
            #expect(second.message.changeSets.compactMap(\.revision) == [5, 6, 7, 8])
            #expect(second.cacheControl == "private, max-age=31536000, immutable")
            // The head: the newest revision, inside its block.
            let head = try await Self.changes(client, "after=8&schemaVersion=1")
            #expect(head.message.changeSets.compactMap(\.revision) == [9, 10, 11])
            #expect(!head.message.hasMore)
            #expect(head.cacheControl == "private, max-age=1")
            let empty = try await Self.changes(client, "after=11&schemaVersion=1")
            #expect(empty.message.changeSets.isEmpty && empty.message.maxRevision == 11 && !empty.message.hasMore)
            #expect(empty.cacheControl == "private, max-age=1")
            // An address inside a block reads to the block's end.
            let inside = try await Self.changes(client, "after=6&schemaVersion=1")
            #expect(inside.message.changeSets.compactMap(\.revision) == [7, 8])
            #expect(inside.message.hasMore)
        }
    }

    @Test func theChangeSetsAreThoseOfSync() async throws {
        try await withApp { client, store in
            let feed = try await store.changeFeed(after: 1, limit: 3, byteBudget: 1 << 20, version: 1)
            let answer = try await Self.changes(client, "after=1&schemaVersion=1")
            let chains = try await store.historyChains(from: 2, through: 4)
            let changeSets: String = feed.changeSets.map { String(decoding: $0.json, as: UTF8.self) }
                .joined(separator: ",")
            let each: String = (Int64(2)...4).map { "\"\(chains[$0]!.prefix.hex)\"" }.joined(separator: ",")
            let expected: String =
                "{\"maxRevision\":4,\"hasMore\":true,\"changeSets\":[\(changeSets)],\"chain\":\"\(chains[4]!.hex)\",\"chains\":[\(each)]}"
            #expect(answer.body == expected)
        }
    }

    @Test func aFinalAnswerStaysTheSameBytesWhileTheLogGrows() async throws {
        try await withApp { client, store in
            let before = try await Self.changes(client, "after=4&schemaVersion=1")
            let headBefore = try await Self.changes(client, "after=8&schemaVersion=1")
            // One commit: revision 12 ends the head's block and is the newest.
            try await ChangeGenerator.mutate(store, changes: 1, seed: 9)
            let after = try await Self.changes(client, "after=4&schemaVersion=1")
            #expect(after.body == before.body)
            #expect(after.eTag == before.eTag)
            // The head grew to its block's end and became final.
            let headAfter = try await Self.changes(client, "after=8&schemaVersion=1")
            #expect(headAfter.message.changeSets.compactMap(\.revision) == [9, 10, 11, 12])
            #expect(headAfter.message.hasMore)
            #expect(headAfter.cacheControl == "private, max-age=31536000, immutable")
            #expect(headAfter.eTag != headBefore.eTag)
        }
    }

    @Test func limitAndBudgetShortenAFinalAnswer() async throws {
        try await withApp { client, _ in
            let limited = try await Self.changes(client, "after=4&schemaVersion=1&limit=2")
            #expect(limited.message.changeSets.compactMap(\.revision) == [5, 6])
            #expect(limited.message.hasMore)
            #expect(limited.cacheControl == "private, max-age=31536000, immutable")
        }
        try await withApp({ $0.syncByteBudget = 1 }) { client, _ in
            let cut = try await Self.changes(client, "after=8&schemaVersion=1")
            #expect(cut.message.changeSets.compactMap(\.revision) == [9])
            #expect(cut.message.hasMore)
            #expect(cut.cacheControl == "private, max-age=31536000, immutable")
            // Cut at the newest revision: nothing later is committed, so the end may still move.
            let last = try await Self.changes(client, "after=10&schemaVersion=1")
            #expect(last.message.changeSets.compactMap(\.revision) == [11])
            #expect(!last.message.hasMore)
            #expect(last.cacheControl == "private, max-age=1")
        }
    }

    @Test func aSharedCacheServerMarksAnswersPublic() async throws {
        try await withApp({ $0.sharedCache = true }) { client, _ in
            let final = try await Self.changes(client, "after=1&schemaVersion=1")
            #expect(final.cacheControl == "public, max-age=31536000, immutable")
            let head = try await Self.changes(client, "after=8&schemaVersion=1")
            #expect(head.cacheControl == "public, max-age=1")
        }
    }

    @Test func entityTagsAnswerConditionalRequests() async throws {
        try await withApp { client, _ in
            let answer = try await Self.changes(client, "after=1&schemaVersion=1")
            let tag = try #require(answer.eTag)
            #expect(tag.count == 34 && tag.hasPrefix("\"") && tag.hasSuffix("\""))
            try await client.execute(
                uri: "/v1/changes?after=1&schemaVersion=1", method: .get,
                headers: headers(token: TestTokens.read, [.ifNoneMatch: "\"other\", \(tag)"])
            ) { response in
                #expect(response.status == .notModified)
                #expect(response.body.readableBytes == 0)
                #expect(response.headers[.eTag] == tag)
                #expect(response.headers[.cacheControl] == "private, max-age=31536000, immutable")
            }
            try await client.execute(
                uri: "/v1/changes?after=1&schemaVersion=1", method: .get,
                headers: headers(token: TestTokens.read, [.ifNoneMatch: "\"other\""])
            ) { response in
                #expect(response.status == .ok)
            }
            // A weak tag compares as the strong one (If-None-Match's weak comparison), and `*` names any.
            for condition in ["W/\(tag)", "*"] {
                try await client.execute(
                    uri: "/v1/changes?after=1&schemaVersion=1", method: .get,
                    headers: headers(token: TestTokens.read, [.ifNoneMatch: condition])
                ) { response in
                    #expect(response.status == .notModified, "\(condition)")
                    #expect(response.headers[.eTag] == tag, "\(condition)")
                }
            }
            // The gzip representation has a tag of its own, which a conditional request may name.
            let gzipTag = "\(tag.dropLast())-gzip\""
            try await client.execute(
                uri: "/v1/changes?after=1&schemaVersion=1", method: .get,
                headers: headers(token: TestTokens.read, [.acceptEncoding: "gzip"])
            ) { response in
                #expect(response.headers[.contentEncoding] == "gzip")
                #expect(response.headers[.eTag] == gzipTag)
            }
            try await client.execute(
                uri: "/v1/changes?after=1&schemaVersion=1", method: .get,
                headers: headers(token: TestTokens.read, [.acceptEncoding: "gzip", .ifNoneMatch: gzipTag])
            ) { response in
                #expect(response.status == .notModified)
                #expect(response.headers[.eTag] == gzipTag)
            }
        }
    }

    @Test func badAddressesAreRefused() async throws {
        try await withApp { client, _ in
            for (query, status, code) in [
                ("schemaVersion=1", HTTPResponse.Status.badRequest, "invalid_parameter"),
                ("after=1", .badRequest, "invalid_parameter"),
                ("after=-1&schemaVersion=1", .badRequest, "invalid_parameter"),
                ("after=x&schemaVersion=1", .badRequest, "invalid_parameter"),
                ("after=1&schemaVersion=0", .badRequest, "invalid_parameter"),
                ("after=1&schemaVersion=1&limit=0", .badRequest, "invalid_parameter"),
                ("after=1&schemaVersion=9", .conflict, "unknown_schema_version"),
                ("after=12&schemaVersion=1", .conflict, "revision_ahead"),
                // The last block ends at the largest revision, not past it.
                ("after=9223372036854775806&schemaVersion=1", .conflict, "revision_ahead"),
                ("after=0&schemaVersion=1", .gone, "history_expired"),
                // One answer, one address: numbers in another form than the plain one are refused,
                // or a cache would keep the same immutable answer under each.
                ("after=+5&schemaVersion=1", .badRequest, "invalid_parameter"),
                ("after=05&schemaVersion=1", .badRequest, "invalid_parameter"),
                ("after=5&schemaVersion=01", .badRequest, "invalid_parameter"),
                ("after=5&schemaVersion=1&limit=%2B2", .badRequest, "invalid_parameter"),
                ("after=5&schemaVersion=1&limit=02", .badRequest, "invalid_parameter"),
                ("after=5&schemaVersion=%201", .badRequest, "invalid_parameter"),
                // Scope values name nothing in a dataset without a scope.
                ("after=5&schemaVersion=1&scopes=1", .badRequest, "invalid_parameter"),
            ] {
                try await client.execute(uri: "/v1/changes?\(query)", method: .get, headers: headers()) { response in
                    #expect(response.status == status, "\(query)")
                    #expect(errorCode(response) == code, "\(query)")
                    #expect(response.headers[.cacheControl] == nil, "\(query)")
                }
            }
            try await client.execute(
                uri: "/v1/changes?after=1&schemaVersion=1", method: .get, headers: headers(token: nil)
            ) {
                response in
                #expect(response.status == .unauthorized)
            }
        }
    }

    /// A library user's block size of 0 is taken as 1, not divided by.
    @Test func aBlockSizeBelowOneIsOne() async throws {
        try await withApp({ $0.changesBlockSize = 0 }) { client, _ in
            let answer = try await Self.changes(client, "after=4&schemaVersion=1")
            #expect(answer.message.changeSets.compactMap(\.revision) == [5])
            #expect(answer.message.hasMore)
        }
    }

    @Test func authAnswersWhetherATokenMayRead() async throws {
        try await withApp { client, _ in
            for token in [TestTokens.read, TestTokens.write, TestTokens.admin] {
                try await client.execute(uri: "/v1/auth", method: .get, headers: headers(token: token)) { response in
                    #expect(response.status == .noContent)
                    #expect(response.body.readableBytes == 0)
                }
            }
            for token in [nil, "wrong"] as [String?] {
                try await client.execute(uri: "/v1/auth", method: .get, headers: headers(token: token)) { response in
                    #expect(response.status == .unauthorized)
                }
            }
        }
    }

    private static func changes(_ client: any TestClientProtocol, _ query: String) async throws
        -> CacheableAnswer<SyncResponse>
    {
        try await cacheableAnswer(client, "/v1/changes?\(query)") { try SyncResponse(json: $0) }
    }
}
