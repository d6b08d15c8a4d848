import Foundation
import Hummingbird
import HummingbirdTesting
import SeedSyncModel
import SeedSyncSQLiteStore
import SeedSyncServer
import SeedSyncStore
import SeedSyncTesting
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Many admin writers over real HTTP connections at once; then the change log, read back through
/// `/v1/sync`, is gap-free and replaying it into an empty store reproduces every table.
@Suite struct ConcurrentWritersTests {
    @Test func concurrentAdminWritersLeaveAGapFreeReplayableLog() async throws {
        try await withTemporaryDirectory { directory in
            let store = try await Fixtures.emptyStore(in: directory)
            let app = try await buildApplication(store: store, configuration: testConfiguration())
            try await app.test(.live) { client in
                let base = URL(string: "http://127.0.0.1:\(client.port!)")!
                let writers = 8
                let commitsPerWriter = 20
                let revisions = try await Fixtures.commitConcurrently(
                    writers: writers, commitsPerWriter: commitsPerWriter
                ) { changeSet in
                    let data = try await post(
                        base.appendingPathComponent("v1/admin/changes"), JSONEncoder().encode(changeSet),
                        token: TestTokens.admin)
                    return try JSONDecoder().decode(CommitResponse.self, from: data).revision
                }
                #expect(revisions.sorted() == Array(1...Int64(writers * commitsPerWriter)))

                let replica = try await Fixtures.emptyStore(in: directory, name: "replica.sqlite")
                var revision: Int64 = 0
                var hasMore = true
                while hasMore {
                    let request = try JSONEncoder().encode(SyncRequest(maxRevision: revision, limit: 23))
                    let response = try JSONDecoder().decode(
                        SyncResponse.self,
                        from: await post(base.appendingPathComponent("v1/sync"), request, token: TestTokens.read))
                    #expect(
                        response.changeSets.map(\.revision)
                            == Array(revision + 1..<revision + 1 + Int64(response.changeSets.count)))
                    for var changeSet in response.changeSets {
                        changeSet.revision = nil
                        revision = try await replica.commit(changeSet)
                    }
                    #expect(response.maxRevision == revision)
                    hasMore = response.hasMore
                }
                #expect(revision == Int64(writers * commitsPerWriter))
                #expect(try await Fixtures.contents(of: replica) == Fixtures.contents(of: store))
            }
        }
    }
}

private func post(_ url: URL, _ body: Data, token: String) async throws -> Data {
    var request = URLRequest(url: url, timeoutInterval: 30)
    request.httpMethod = "POST"
    request.httpBody = body
    request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
    request.setValue("application/json", forHTTPHeaderField: "Content-Type")
    let (data, response) = try await TestHTTP.data(for: request)
    guard response.statusCode == 200 else {
        throw UnexpectedStatus(status: response.statusCode, body: String(decoding: data, as: UTF8.self))
    }
    return data
}

private struct UnexpectedStatus: Error {
    let status: Int
    let body: String
}
