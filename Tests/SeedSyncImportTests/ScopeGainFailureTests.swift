import Foundation
import HTTPTypes
import Hummingbird
import SeedSyncImport
import SeedSyncModel
import SeedSyncSeed
import SeedSyncTesting
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A device of team 1 gaining team 2 through a proxy that alters the snapshot pages of the gain:
/// rows the server should never have sent are refused, nothing is taken in, and the device keeps
/// its rows and its grant until a true answer comes.
@Suite struct ScopeGainFailureTests {
    /// How a page of the gain is altered: the type whose pages change, and the row added (by
    /// column name, the other columns copied from the page's first row).
    static let cases: [(what: String, type: String, row: [String: Int64])] = [
        // A team's own row: it references nothing, so only the grant check can refuse it.
        ("a row of a team not granted", "teams", ["id": 3]),
        ("a row whose reference no row answers", "tickets", ["id": 9_998, "team_id": 2, "event_id": 99_999]),
    ]

    @Test(arguments: cases.indices) func aGainOfRowsTheServerShouldNotHaveSentTakesNothingIn(_ index: Int) async throws
    {
        let (what, type, row) = Self.cases[index]
        try await ScopedImportTests.withTeams(.sqlite) { store, url, served in
            let one = try await TestIdentityProvider.teamToken([1])
            let both = try await TestIdentityProvider.teamToken([1, 2])
            let seed = try await served.builder("team-1.sqlite", token: one).build().output
            let app = served.path("app.sqlite")
            @Sendable func importer(_ server: URL, _ token: String) -> SeedImporter {
                SeedImporter(
                    configuration: .init(
                        seed: seed, database: app,
                        server: .init(serverURL: server, token: token, requestTimeout: 10, retry: .none)))
            }
            _ = try await importer(url, one).run()
            let before = try contents(ofSeed: app)
            try await Self.withProxy(to: url, adding: row, toPagesOf: type) { proxy, altered in
                let error = await #expect(throws: ImportError.self, "\(what)") {
                    try await importer(proxy, both).run()
                }
                #expect(error?.code == .invalidChangeSet, "\(what): \(String(describing: error))")
                #expect(altered.get() > 0, "\(what): the proxy altered a page")
            }
            #expect(try contents(ofSeed: app) == before, "\(what): the database keeps its rows")
            #expect(try SeedFile.read(app) { try $0.metadata().scopes } == [1], "\(what): and its grant")
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: served.directory.path)
                .filter { $0.hasPrefix("app.sqlite.") && !$0.hasSuffix("-wal") && !$0.hasSuffix("-shm") }
            #expect(leftovers.filter { $0.contains("migration") }.isEmpty, "\(what): no staging file left")
            _ = try await importer(url, both).run()
            #expect(try contents(ofSeed: app) == (try await Fixtures.contents(of: store, grant: .only([1, 2]))))
            #expect(try SeedFile.read(app) { try $0.metadata().scopes } == [1, 2])
        }
    }

    /// Runs `body` with a proxy on loopback in front of `origin` that adds `row` to every snapshot
    /// page of `type` it passes on (after the page's rows, so keys stay in order when the key is
    /// larger); `body` gets the proxy's URL and the number of pages altered.
    static func withProxy(
        to origin: URL, adding row: [String: Int64], toPagesOf type: String,
        _ body: @escaping @Sendable (URL, LockedValue<Int>) async throws -> Void
    ) async throws {
        let altered = LockedValue(0)
        let router = Router()
        let forward: @Sendable (Request, BasicRequestContext) async throws -> Response = { request, _ in
            var forwarded = URLRequest(url: URL(string: origin.absoluteString + request.uri.description)!)
            forwarded.httpMethod = request.method.rawValue
            forwarded.timeoutInterval = 10
            if let authorization = request.headers[.authorization] {
                forwarded.setValue(authorization, forHTTPHeaderField: "Authorization")
            }
            if let contentType = request.headers[.contentType] {
                forwarded.setValue(contentType, forHTTPHeaderField: "Content-Type")
            }
            let sent = try await request.body.collect(upTo: 1 << 20)
            if sent.readableBytes > 0 { forwarded.httpBody = Data(buffer: sent) }
            var (data, response) = try await TestHTTP.data(for: forwarded)
            if request.uri.path == "/v1/snapshot/\(type)", response.statusCode == 200 {
                data = try Self.page(data, adding: row)
                altered.set(altered.get() + 1)
            }
            return Response(
                status: HTTPResponse.Status(code: response.statusCode),
                headers: [.contentType: response.value(forHTTPHeaderField: "Content-Type") ?? "application/json"],
                body: .init(byteBuffer: ByteBuffer(bytes: data)))
        }
        router.get("**", use: forward)
        router.post("**", use: forward)
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await app.test(.live) { client in
            try await body(URL(string: "http://127.0.0.1:\(client.port!)")!, altered)
        }
    }

    /// The snapshot page `data` with a row added: the page's first row with `row`'s columns
    /// replaced.
    static func page(_ data: Data, adding row: [String: Int64]) throws -> Data {
        var page = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let columns = try #require(page["columns"] as? [String])
        var rows = try #require(page["rows"] as? [[Any]])
        guard var copied = rows.first else { return data }
        for (name, value) in row {
            copied[try #require(columns.firstIndex(of: name))] = value
        }
        rows.append(copied)
        page["rows"] = rows
        return try JSONSerialization.data(withJSONObject: page)
    }
}
