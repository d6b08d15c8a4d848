import Foundation
import SeedSyncClient
import SeedSyncModel
import SeedSyncServer
import SeedSyncStore
import SeedSyncTesting
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Live reads (`GET /v1/changes` with `live`) on a real server on loopback: held and released by
/// the next commit on both stores, answered at once when behind, the exact headers a cache
/// collapses readers on (lifetime, cursor, entity tag), the cursor of an empty answer always
/// higher, a reader never skipping a revision, and bad cursors refused.
@Suite struct LiveReadTests {
    @Test(arguments: StoreBackend.tested)
    func aLiveReadIsHeldUntilTheNextCommitAndEveryReaderGetsTheSameBytes(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let first = try await store.commit(Fixtures.catalogCreation())
            try await withLiveServer(store, configure: { $0.sharedCache = true }) { url in
                let version = try await store.schemaInfo().schemaVersion
                let readers = (0..<20).map { _ in
                    Task { try await Self.read(url, "after=\(first)&schemaVersion=\(version)&live=0") }
                }
                try await LiveSyncTests.waitUntilHeld(20, on: url)
                let second = try await store.commit(Fixtures.catalogCreation(author: "b", book: 2))
                var bodies: Set<Data> = []
                for reader in readers {
                    let answer = try await reader.value
                    #expect(answer.status == 200)
                    #expect(answer.message.changeSets.compactMap(\.revision) == [second])
                    #expect(!answer.message.hasMore)
                    // Kept for the wait (20 s) and 5 s more; the next read from the new revision starts over.
                    #expect(answer.headers["Cache-Control"] == "public, max-age=25")
                    #expect(answer.headers[LiveCursor.headerName] == "0")
                    bodies.insert(answer.body)
                }
                #expect(bodies.count == 1, "one commit, one answer for every reader at the revision")
                try await LiveSyncTests.waitUntilHeld(0, on: url)
            }
        }
    }

    /// A reader behind is answered at once with what a plain read answers (here a final block,
    /// immutable), with the cursor that starts over.
    @Test func aReaderBehindIsAnsweredAtOnceAsAPlainReadIs() async throws {
        try await StoreBackend.sqlite.withStore { store in
            for book in 1...6 {
                _ = try await store.commit(Fixtures.catalogCreation(author: "a\(book)", book: Int64(book)))
            }
            try await withLiveServer(store, configure: { $0.changesBlockSize = 4 }) { url in
                let version = try await store.schemaInfo().schemaVersion
                let start = ContinuousClock.now
                let final = try await Self.read(url, "after=1&schemaVersion=\(version)&live=7")
                #expect(final.message.changeSets.compactMap(\.revision) == [2, 3, 4])
                #expect(final.message.hasMore)
                #expect(final.headers["Cache-Control"] == "private, max-age=31536000, immutable")
                #expect(final.headers[LiveCursor.headerName] == "0")
                let head = try await Self.read(url, "after=4&schemaVersion=\(version)&live=0")
                #expect(head.message.changeSets.compactMap(\.revision) == [5, 6])
                #expect(head.headers["Cache-Control"] == "private, max-age=25")
                #expect(ContinuousClock.now - start < .seconds(15), "neither read was held")
                let plain = try await Self.read(url, "after=4&schemaVersion=\(version)")
                #expect(plain.body == head.body, "the same change sets as a plain read")
                #expect(plain.headers[LiveCursor.headerName] == nil, "a plain read says no cursor")
            }
        }
    }

    /// The wait ends with no commit: an empty answer, kept the wait plus 5 s, whose cursor is
    /// higher than the one asked with (the number of whole waits since 1970, or one more than a
    /// cursor already past it), and whose entity tag differs from the same bytes under another cursor.
    @Test func anEmptyAnswerCarriesAHigherCursor() async throws {
        try await StoreBackend.sqlite.withStore { store in
            let first = try await store.commit(Fixtures.catalogCreation())
            try await withLiveServer(store, configure: { $0.liveReadWait = .seconds(1) }) { url in
                let version = try await store.schemaInfo().schemaVersion
                let start = ContinuousClock.now
                let empty = try await Self.read(url, "after=\(first)&schemaVersion=\(version)&live=0")
                #expect(ContinuousClock.now - start >= .milliseconds(900), "held for the live wait")
                #expect(empty.message.changeSets.isEmpty && empty.message.maxRevision == first)
                #expect(empty.headers["Cache-Control"] == "private, max-age=6")
                let cursor = try #require(empty.headers[LiveCursor.headerName].flatMap(LiveCursor.init(header:)))
                let now = Int64(Date().timeIntervalSince1970)
                #expect((now - 5...now).contains(cursor.value), "whole seconds since 1970 for a 1-second wait")
                let ahead = now + 1_000
                let past = try await Self.read(url, "after=\(first)&schemaVersion=\(version)&live=\(ahead)")
                #expect(past.headers[LiveCursor.headerName] == String(ahead + 1), "always higher than asked")
                #expect(past.body == empty.body)
                #expect(past.headers["ETag"] != empty.headers["ETag"], "a cache must not revalidate one with the other")
            }
        }
    }

    /// A reader that follows its answers through 30 commits made at random moments (some while
    /// it is held, some between its reads) sees every revision once, in order.
    @Test(arguments: StoreBackend.tested)
    func aReaderFollowingItsAnswersNeverSkipsARevision(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let first = try await store.commit(Fixtures.catalogCreation())
            try await withLiveServer(store, configure: { $0.liveReadWait = .seconds(2) }) { url in
                let version = try await store.schemaInfo().schemaVersion
                let client = LiveSyncTests.client(url)
                let writer = Task {
                    var revisions: [Int64] = []
                    for book in 1...30 {
                        try await Task.sleep(for: .milliseconds(Int.random(in: 0...120)))
                        revisions.append(
                            try await store.commit(Fixtures.catalogCreation(author: "w\(book)", book: Int64(book + 1))))
                    }
                    return revisions
                }
                var (revision, cursor, seen) = (first, LiveCursor.start, [Int64]())
                let deadline = ContinuousClock.now + .seconds(60)
                while seen.count < 30, ContinuousClock.now < deadline {
                    let answer = try await client.liveChanges(after: revision, schemaVersion: version, cursor: cursor)
                    seen += answer.response.changeSets.compactMap(\.revision)
                    (revision, cursor) = (answer.response.maxRevision, try #require(answer.cursor))
                }
                #expect(seen == (try await writer.value))
            }
        }
    }

    @Test func badCursorsAreRefused() async throws {
        try await StoreBackend.sqlite.withStore { store in
            try await withLiveServer(store) { url in
                let version = try await store.schemaInfo().schemaVersion
                for bad in ["-1", "01", "+1", "x", ""] {
                    let answer = try await Self.read(url, "after=0&schemaVersion=\(version)&live=\(bad)")
                    #expect(answer.status == 400, "live=\(bad)")
                    #expect(String(decoding: answer.body, as: UTF8.self).contains("live"), "live=\(bad)")
                }
            }
        }
    }

    @Test func theCursorOnlyRises() {
        let interval = Duration.seconds(20)
        let now = Date(timeIntervalSince1970: 2_000_000_000)
        #expect(LiveCursor.start.next(every: interval, now: now) == LiveCursor(100_000_000))
        #expect(LiveCursor(100_000_000).next(every: interval, now: now) == LiveCursor(100_000_001))
        #expect(LiveCursor(5_000_000_000).next(every: interval, now: now) == LiveCursor(5_000_000_001))
        #expect(LiveCursor(header: "42") == LiveCursor(42))
        for bad in ["-1", "042", "+42", " 42", "4.2", ""] { #expect(LiveCursor(header: bad) == nil, "\(bad)") }
    }

    // MARK: - Support

    struct Answer {
        var status: Int
        /// By lower-case name.
        var fields: [String: String]
        var body: Data
        var headers: Headers { Headers(fields: fields) }
        var message: SyncResponse {
            (try? SyncResponse(json: JSONParser.parse(body)))
                ?? SyncResponse(maxRevision: -1, hasMore: false, changeSets: [])
        }
    }

    /// Response headers, looked up by name in any case.
    struct Headers {
        var fields: [String: String]
        subscript(name: String) -> String? { fields[name.lowercased()] }
    }

    /// `GET /v1/changes?query`, with a request timeout past a 20-second live wait.
    static func read(_ url: URL, _ query: String) async throws -> Answer {
        var request = URLRequest(url: URL(string: "\(url.absoluteString)/v1/changes?\(query)")!, timeoutInterval: 60)
        request.setValue("Bearer \(liveServerToken)", forHTTPHeaderField: "Authorization")
        let (data, response) = try await TestHTTP.data(for: request)
        let headers = response.allHeaderFields.reduce(into: [String: String]()) { fields, field in
            fields["\(field.key)".lowercased()] = "\(field.value)"
        }
        return Answer(status: response.statusCode, fields: headers, body: data)
    }
}
