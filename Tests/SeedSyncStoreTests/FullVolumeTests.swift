import Foundation
import GRDB
import SeedSyncDemo
import SeedSyncModel
import SeedSyncSQLiteStore
import SeedSyncStore
import SeedSyncTesting
import Testing

/// The server's SQLite store on a volume that is full for real (a small tmpfs): a commit and a push
/// fail with an error naming the database, nothing of them is written, the store keeps serving reads,
/// and once there is room the same writes succeed.
@Suite(.enabled(if: SmallVolume.isAvailable, "mounting a tmpfs needs root"))
struct FullVolumeTests {
    @Test func writesOnAFullVolumeFailWholeAndSucceedOnceThereIsRoom() async throws {
        try await SmallVolume.with(kilobytes: 8192) { volume in
            let store = try await Fixtures.demoStore(events: 500, locations: 20, in: URL(fileURLWithPath: volume.path))
            let before = try await Fixtures.contents(of: store)
            let revision = try await store.revisions().revision
            let big = String(repeating: "a long description ", count: 20_000)
            let creation = try ChangeSet(
                json: JSONParser.parse(
                    Array(
                        #"{"types": ["locations"], "locations": {"create": [9001], "attributes": {"9001": {"name": "\#(big)", "city": "Oslo", "latitude": 1.5, "longitude": 2.5}}}}"#
                            .utf8)))
            var pushed = creation
            pushed.changes[0].create = [-1]
            pushed.changes[0].attributes = ["-1": creation.changes[0].attributes["9001"]!]
            try volume.fill(leaving: 0)
            await #expect { try await store.commit(creation) } throws: { "\($0)".contains(store.path) }
            await #expect {
                try await store.push(PushedChangeSet(id: "full-1", changeSet: pushed), retention: .seconds(3600))
            } throws: { "\($0)".contains(store.path) }
            #expect(try await store.revisions().revision == revision)
            #expect(try await Fixtures.contents(of: store) == before)
            try FileManager.default.removeItem(atPath: volume.path(".filler"))
            #expect(try await store.commit(creation) == revision + 1)
            let result = try await store.push(
                PushedChangeSet(id: "full-1", changeSet: pushed), retention: .seconds(3600))
            guard case .applied(let applied, _) = result.status else { throw TestSetupError("not applied: \(result)") }
            #expect(applied == revision + 2)
            try store.close()
            let queue = try DatabaseQueue(path: store.path)
            #expect(try await queue.read { try String.fetchOne($0, sql: "PRAGMA quick_check") } == "ok")
            try queue.close()
        }
    }
}
