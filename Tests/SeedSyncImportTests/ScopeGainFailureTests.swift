import Foundation
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
        try await withAlteringProxy(to: origin) { answer in
            guard answer.path == "/v1/snapshot/\(type)", answer.status == 200 else { return answer }
            var changed = answer
            changed.body = try Self.page(answer.body, adding: row)
            altered.set(altered.get() + 1)
            return changed
        } _: { proxy in
            try await body(proxy, altered)
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
