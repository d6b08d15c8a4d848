import Foundation
import Hummingbird
import HummingbirdTesting
import SeedSyncBuild
import SeedSyncClient
import SeedSyncDemo
import SeedSyncModel
import SeedSyncSeed
import SeedSyncTesting
import Testing

/// `seed-build` against a server that sends snapshot pages a correct server never would.
@Suite struct MalformedServerTests {
    static let location = #"[1, "Hall", "Oslo", 59.9, 10.7, 1]"#

    static let badPages: [(String, String)] = [
        ("not JSON", "{"),
        (
            "a value of the wrong type",
            #"{"type": "locations", "revision": 1, "columns": ["id", "name", "city", "latitude", "longitude", "revision"], "rows": [[1, "Hall", "Oslo", "north", 10.7, 1]], "next": null}"#
        ),
        (
            "missing a non-null value",
            #"{"type": "locations", "revision": 1, "columns": ["id", "name", "city", "latitude", "longitude", "revision"], "rows": [[1, null, "Oslo", 59.9, 10.7, 1]], "next": null}"#
        ),
        (
            "other columns",
            #"{"type": "locations", "revision": 1, "columns": ["id", "name", "revision"], "rows": [[1, "Hall", 1]], "next": null}"#
        ),
        (
            "keys out of order",
            #"{"type": "locations", "revision": 1, "columns": ["id", "name", "city", "latitude", "longitude", "revision"], "rows": [[2, "Hall", "Oslo", 59.9, 10.7, 1], \#(location)], "next": null}"#
        ),
        (
            "a row after the page's revision",
            #"{"type": "locations", "revision": 1, "columns": ["id", "name", "city", "latitude", "longitude", "revision"], "rows": [[1, "Hall", "Oslo", 59.9, 10.7, 5]], "next": null}"#
        ),
        (
            "a next key that is not the last row's",
            #"{"type": "locations", "revision": 1, "columns": ["id", "name", "city", "latitude", "longitude", "revision"], "rows": [\#(location)], "next": 7}"#
        ),
        (
            "a row that is not an array",
            #"{"type": "locations", "revision": 1, "columns": ["id", "name", "city", "latitude", "longitude", "revision"], "rows": [\#(location), 2], "next": 2}"#
        ),
        ("a page of another type", #"{"type": "events", "revision": 1, "columns": [], "rows": [], "next": null}"#),
    ]

    @Test(arguments: badPages.map(\.0))
    func badSnapshotPagesStopTheBuild(_ name: String) async throws {
        let page = Self.badPages.first { $0.0 == name }!.1
        try await Self.expectBuildFails(serving: ["locations": page]) { error in
            error is SeedError || (error as? SyncClientError)?.code == .malformedResponse
        }
    }

    /// A page read before the revision the build asked for (`notBefore`, the history's start): a
    /// cache in front of the server that keys pages without the query. The build could not catch
    /// up from it, and says why.
    @Test func aPageReadBeforeTheHistoryStopsTheBuild() async throws {
        let page =
            #"{"type": "locations", "revision": 0, "columns": ["id", "name", "city", "latitude", "longitude", "revision"], "rows": [], "next": null}"#
        try await Self.expectBuildFails(serving: ["locations": page]) { error in
            (error as? SyncClientError)?.code == .malformedResponse
                && "\(error)".contains("notBefore=1 answered with a page read at revision 0")
        }
    }

    /// Pages that are each well-formed but whose references dangle at the final revision: only
    /// the foreign-key check of the finish can see it (the work file does not enforce them).
    @Test func referencesThatDangleAtTheFinalRevisionStopTheBuild() async throws {
        let columns =
            #"["id", "title", "starts_at", "ends_at", "location_id", "capacity", "cancelled", "description", "revision"]"#
        let pages = [
            "locations":
                #"{"type": "locations", "revision": 1, "columns": ["id", "name", "city", "latitude", "longitude", "revision"], "rows": [\#(Self.location)], "next": null}"#,
            "events":
                #"{"type": "events", "revision": 1, "columns": \#(columns), "rows": [[1, "Gig", "2026-01-01T10:00:00Z", null, 99, 10, false, null, 1]], "next": null}"#,
        ]
        try await Self.expectBuildFails(serving: pages) { error in
            (error as? SeedError)?.code == .invalidData && "\(error)".contains("missing row of locations")
        }
    }

    /// Builds from a server whose snapshot pages are `snapshots` (see ``serve(snapshots:_:)``):
    /// the build must throw an error `matches` accepts and leave nothing behind.
    static func expectBuildFails(
        serving snapshots: [String: String], _ matches: @escaping @Sendable (any Error) -> Bool
    ) async throws {
        try await withTemporaryDirectory { directory in
            try await serve(snapshots: snapshots) { url in
                let output = directory.appendingPathComponent("seed.sqlite").path
                let client = SyncClient(
                    configuration: .init(serverURL: url, token: nil, requestTimeout: 15, retry: .none))
                await #expect {
                    try await SeedBuilder(client: client, options: .init(output: output)).build()
                } throws: { error in matches(error) }
                let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.path)
                #expect(leftovers.isEmpty)
            }
        }
    }

    /// A server with the demo schema at revision 1 that answers each type's snapshot with its page
    /// in `snapshots` (the `locations` page for a type it does not list).
    static func serve(snapshots: [String: String], _ body: @escaping @Sendable (URL) async throws -> Void) async throws
    {
        let router = Router()
        router.get("v1/schema") { _, _ in
            json(
                String(
                    decoding: try JSONEncoder().encode(
                        SchemaInfo(schema: DemoDataset.schema, revision: 1, minRevision: 1)), as: UTF8.self))
        }
        router.get("v1/snapshot/:type") { _, context in
            json(snapshots[context.parameters.get("type") ?? ""] ?? snapshots["locations"]!)
        }
        router.post("v1/sync") { _, _ in json(#"{"maxRevision": 1, "hasMore": false, "changeSets": []}"#) }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await app.test(.live) { client in try await body(URL(string: "http://127.0.0.1:\(client.port!)")!) }
    }

    static func json(_ text: String) -> Response {
        Response(
            status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}
