import Foundation
import Hummingbird
import HummingbirdTesting
import SeedSyncDemo
import SeedSyncModel
import SeedSyncServer
import SeedSyncStore
import SeedSyncTesting
import Testing

/// `GET /v1/sizes`: the server's estimates of what a snapshot and each catch-up would download,
/// against what they do download, on every store.
@Suite struct SizeRouteTests {
    @Test(arguments: StoreBackend.tested) func sizesAreWhatTheWaysInDownload(backend: StoreBackend) async throws {
        try await backend.withDemoStore(events: 3_000, locations: 60) { store in
            // More revisions than the sample (1,000), so that an old catch-up is estimated.
            try await ChangeGenerator.mutate(store, changes: 1_500, seed: 3)
            let (revision, minRevision) = try await store.revisions()
            let app = try await buildApplication(store: store, configuration: testConfiguration())
            try await app.test(.router) { client in
                let (recent, old) = (revision - 10, revision - 1_400)
                let answer = try await client.execute(
                    uri: "/v1/sizes?schemaVersion=1&after=\(old),\(recent),\(revision + 1)", method: .get,
                    headers: headers())
                #expect(answer.status == .ok)
                let sizes = try decode(DownloadSizes.self, answer)
                #expect(sizes.revision == revision && sizes.schemaVersion == 1)
                // Past the newest revision: no catch-up to size.
                #expect(sizes.changes.map(\.after) == [old, recent])

                let pages = try await Self.snapshotBytes(through: client, of: store)
                let snapshot = try #require(sizes.snapshot)
                #expect(snapshot.rows == Int64(pages.rows))
                #expect(abs(Double(snapshot.bytes) / Double(pages.bytes) - 1) < 0.15, "\(snapshot) \(pages)")
                #expect(abs(Double(snapshot.gzipped) / Double(pages.gzipped) - 1) < 0.15, "\(snapshot) \(pages)")

                // Among the newest 1,000 revisions the size is exact; before them, estimated.
                let exact = try await Self.changeBytes(of: store, after: recent)
                #expect(
                    sizes.changes(after: recent)
                        == .init(
                            after: recent, revisions: 10, bytes: Int64(exact),
                            gzipped: sizes.changes(after: recent)!.gzipped))
                let whole = try await Self.changeBytes(of: store, after: old)
                let estimated = try #require(sizes.changes(after: old))
                #expect(estimated.revisions == 1_400)
                #expect(abs(Double(estimated.bytes) / Double(whole) - 1) < 0.15, "\(estimated) \(whole)")
                #expect(estimated.gzipped > 0 && estimated.gzipped < estimated.bytes)

                // Below the history's start: no catch-up to size.
                #expect(minRevision <= old)
                _ = try await store.compact(keepingRevisions: 100)
                let compacted = try decode(
                    DownloadSizes.self,
                    try await client.execute(
                        uri: "/v1/sizes?schemaVersion=1&after=\(old),\(recent)", method: .get, headers: headers()))
                #expect(compacted.changes.map(\.after) == [recent])
            }
        }
    }

    @Test func badRevisionListsAreRefused() async throws {
        try await StoreBackend.sqlite.withDemoStore(events: 20, locations: 3) { store in
            let app = try await buildApplication(store: store, configuration: testConfiguration())
            try await app.test(.router) { client in
                for query in [
                    "after=1,2,3,4,5,6,7,8,9", "after=x", "after=-1", "after=1,,2", "after=", "after=01",
                    "schemaVersion=0",
                ] {
                    let answer = try await client.execute(uri: "/v1/sizes?\(query)", method: .get, headers: headers())
                    #expect(answer.status == .badRequest && errorCode(answer) == "invalid_parameter", "\(query)")
                }
                let none = try await client.execute(uri: "/v1/sizes", method: .get, headers: headers())
                let sizes = try decode(DownloadSizes.self, none)
                #expect(none.status == .ok && sizes.changes.isEmpty && sizes.snapshot?.rows == 23)
                let anonymous = try await client.execute(uri: "/v1/sizes", method: .get, headers: headers(token: nil))
                #expect(anonymous.status == .unauthorized)
            }
        }
    }

    /// Every page of every type, as a client downloads them: their rows, and their bytes plain and gzipped.
    static func snapshotBytes(through client: any TestClientProtocol, of store: any SyncStore) async throws
        -> (rows: Int, bytes: Int, gzipped: Int)
    {
        var total = (rows: 0, bytes: 0, gzipped: 0)
        for type in try await store.schemaInfo(version: 1, grant: .all).types {
            var after: String?
            repeat {
                let uri = "/v1/snapshot/\(type.name)?limit=5000&schemaVersion=1" + (after.map { "&after=\($0)" } ?? "")
                let plain = try await client.execute(uri: uri, method: .get, headers: headers())
                let gzipped = try await client.execute(
                    uri: uri, method: .get, headers: headers(token: TestTokens.read, [.acceptEncoding: "gzip"]))
                #expect(gzipped.headers[.contentEncoding] == "gzip")
                let page = try SnapshotPage(json: JSONParser.parse(Array(buffer: plain.body)))
                total.rows += page.rows.count
                total.bytes += plain.body.readableBytes
                total.gzipped += gzipped.body.readableBytes
                after = page.next == .null ? nil : page.next.keyString
            } while after != nil
        }
        return total
    }

    /// The change sets after `revision`, as answers carry them: their JSON and a comma each.
    static func changeBytes(of store: any SyncStore, after revision: Int64) async throws -> Int {
        var (after, bytes) = (revision, 0)
        while true {
            let feed = try await store.changeFeed(after: after, limit: 1_000, byteBudget: 1 << 24, version: 1)
            guard let last = feed.changeSets.last else { return bytes }
            bytes += feed.changeSets.reduce(0) { $0 + $1.json.count + 1 }
            after = last.revision
        }
    }
}
