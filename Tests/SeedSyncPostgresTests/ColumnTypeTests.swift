import Foundation
import SeedSyncBuild
import SeedSyncClient
import SeedSyncImport
import SeedSyncModel
import SeedSyncPostgres
import SeedSyncTesting
import Testing

/// The column types teams really have: `uuid`, enums, `json`, `jsonb`, arrays and exact `numeric`,
/// read from the catalog, served, written by pushes and commits, and carried into seeds and app
/// databases unchanged.
@Suite(.needsPostgres, .tags(.postgres)) struct ColumnTypeTests {
    static let tables = """
        CREATE TYPE status AS ENUM ('draft', 'live');
        CREATE TABLE items (
          id bigint PRIMARY KEY, ref uuid NOT NULL, status status NOT NULL, doc jsonb, meta json,
          tags text[], scores integer[], price numeric NOT NULL, rate numeric(10, 2), day date, clock time, span interval
        );
        INSERT INTO items VALUES (1, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 'draft', '{"x": [1, 2]}', '[true]',
          '{"a", "b"}', '{1, 2}', 123456789012345678901234567890.123456789, 12.50, '2026-11-28', '10:15', '1 day')
        """

    static let schema = DatasetSchema(
        dataset: "items", schemaVersion: 1,
        types: [
            EntityType(
                name: "items", primaryKey: PrimaryKey(name: "id", type: .integer),
                fields: [
                    Field(name: "ref", type: .text), Field(name: "status", type: .text),
                    Field(name: "doc", type: .json, nullable: true), Field(name: "meta", type: .json, nullable: true),
                    Field(name: "tags", type: .json, nullable: true),
                    Field(name: "scores", type: .json, nullable: true),
                    Field(name: "price", type: .text), Field(name: "rate", type: .real, nullable: true),
                    Field(name: "day", type: .text, nullable: true), Field(name: "clock", type: .text, nullable: true),
                    Field(name: "span", type: .text, nullable: true),
                ])
        ])

    @Test func readFromTheCatalogServedWrittenAndCarriedIntoApps() async throws {
        try await withTeamDatabase(Self.tables) { location in
            #expect(
                try await PostgresSyncStore.schema(at: location, tables: ["items"], dataset: "items") == Self.schema)
            try await PostgresSyncStore.attach(at: location, schema: Self.schema)
            try await TestPostgres.withStore(at: location) { store in
                let first = try #require(try await store.snapshotPage(of: "items", after: nil, limit: 10).rows.first)
                #expect(first[7] == "123456789012345678901234567890.123456789" && first[8] == 12.5)
                #expect(first[9] == "2026-11-28" && first[10] == "10:15:00" && first[11] == "P1D")
                // A commit and a push write every kind of column back.
                let values: [String: JSONValue] = [
                    "ref": "b1eebc99-9c0b-4ef8-bb6d-6bb9bd380a12", "status": "live",
                    "doc": .object(["k": .array(["v", 1])]), "meta": 3, "tags": .array(["x", "y z"]),
                    "scores": .array([4, .null, 6]), "price": "0.000000000000000000001", "rate": 7.25,
                    "day": "1999-12-31", "clock": "23:59:59.5", "span": "P1Y2M3DT4H5M6.5S",
                ]
                try await store.commit(
                    ChangeSet(changes: [TypeChanges(type: "items", create: [2], attributes: ["2": values])]))
                var edit = values
                edit["status"] = "draft"
                edit["tags"] = .array([])
                edit["scores"] = .null
                edit["span"] = "PT-0.5S"
                edit["revision"] = 2
                let pushed = try await store.push(
                    PushedChangeSet(
                        id: "edit",
                        changeSet: ChangeSet(changes: [TypeChanges(type: "items", update: [2], attributes: ["2": edit])]
                        )),
                    retention: .seconds(60))
                guard case .applied = pushed.status else {
                    Issue.record("push: \(pushed)")
                    return
                }
                let rows = try await store.snapshotPage(of: "items", after: nil, limit: 10).rows
                #expect(
                    rows[1]
                        == [
                            2, "b1eebc99-9c0b-4ef8-bb6d-6bb9bd380a12", "draft", .object(["k": .array(["v", 1])]), 3,
                            .array([]), .null, "0.000000000000000000001", 7.25, "1999-12-31",
                            "23:59:59.5", "PT-0.5S", 3,
                        ])
                // An enum label the type lacks is refused by PostgreSQL, as an invalid change set.
                var wrong = values
                wrong["status"] = "gone"
                await #expect {
                    try await store.commit(
                        ChangeSet(changes: [TypeChanges(type: "items", create: [3], attributes: ["3": wrong])]))
                } throws: { ($0 as? SyncStoreError)?.code == .invalidChangeSet && "\($0)".contains("items[3]") }
                // Seeds and app databases carry the values as they are served.
                try await withLiveServer(store) { url in
                    try await withTemporaryDirectory { directory in
                        let client = SyncClient(
                            configuration: .init(
                                serverURL: url, token: liveServerToken, requestTimeout: 10, retry: .none))
                        let seed = directory.appendingPathComponent("items.sqlite").path
                        _ = try await SeedBuilder(client: client, options: .init(output: seed)).build()
                        #expect(try contents(ofSeed: seed) == (try await Fixtures.contents(of: store)))
                        let database = directory.appendingPathComponent("app/items.sqlite").path
                        try await SeedImporter(
                            configuration: .init(
                                seed: seed, database: database,
                                server: .init(serverURL: url, token: liveServerToken, requestTimeout: 10, retry: .none))
                        ).run()
                        #expect(try contents(ofSeed: database) == (try await Fixtures.contents(of: store)))
                    }
                }
            }
        }
    }
}
