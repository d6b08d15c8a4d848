import Foundation
import Hummingbird
import HummingbirdTesting
import SeedSyncModel
import SeedSyncServer
import SeedSyncTesting
import Testing

/// Schema versions through the router, on every store: the version a request names (a query
/// parameter or the sync body's `schemaVersion`), the oldest when it names none, and an upgrade
/// made while the application runs.
@Suite struct VersionRouteTests {
    /// A catalog store at version 3 with a book, an application over it, then the upgrade to 4.
    func withUpgradedApp(_ test: @escaping @Sendable (any TestClientProtocol) async throws -> Void) async throws {
        for backend in StoreBackend.tested {
            try await backend.withStore { store in
                try await store.commit(Fixtures.catalogCreation())
                let app = try await buildApplication(store: store, configuration: testConfiguration())
                try await app.test(.router) { client in
                    try await backend.upgrade(
                        store, to: Fixtures.catalogSchemaV4, renaming: Fixtures.catalogRenames,
                        alterations: Fixtures.catalogAlterations)
                    try await test(client)
                }
            }
        }
    }

    /// A request that names no version gets the oldest from every endpoint: a client written
    /// before versions existed reads the schema, then pages and change sets of the same shape.
    @Test func schemaOfEachVersionOldestByDefault() async throws {
        try await withUpgradedApp { client in
            var columns: [String] = []
            try await client.execute(uri: "/v1/schema", method: .get, headers: headers()) { response in
                let info = try decode(SchemaInfo.self, response)
                #expect(info.schemaVersion == 3 && info.servedVersions == [3, 4])
                #expect(info.versions?.map(\.revision) == [0, 1])
                columns = info.schema.type(named: "authors")?.columnNames ?? []
            }
            try await client.execute(uri: "/v1/snapshot/authors", method: .get, headers: headers()) { response in
                let page = try decode(SnapshotPage.self, response)
                #expect(page.columns == columns)
            }
            try await client.execute(
                uri: "/v1/sync", method: .post, headers: headers(), body: body(#"{"maxRevision": 0}"#)
            ) { response in
                let attributes = try decode(SyncResponse.self, response).changeSets.first?["authors"]?.attributes
                #expect(attributes?["le-guin"].map { Set($0.keys) } == Set(columns.dropFirst()))
            }
            try await client.execute(uri: "/v1/schema?version=3", method: .get, headers: headers()) { response in
                let info = try decode(SchemaInfo.self, response)
                #expect(info.schemaVersion == 3 && info.types == Fixtures.catalogSchema.types)
            }
            try await client.execute(uri: "/v1/schema?version=5", method: .get, headers: headers()) { response in
                #expect(response.status == .conflict && errorCode(response) == "unknown_schema_version")
                #expect(String(buffer: response.body).contains("versions served: 3, 4"))
            }
            try await client.execute(uri: "/v1/schema?version=x", method: .get, headers: headers()) { response in
                #expect(response.status == .badRequest)
            }
        }
    }

    /// A client that names no version is answered in the oldest, never silently in a newer one.
    @Test func pagesAndChangeSetsInTheVersionAsked() async throws {
        try await withUpgradedApp { client in
            try await client.execute(uri: "/v1/snapshot/authors", method: .get, headers: headers()) { response in
                let page = try decode(SnapshotPage.self, response)
                #expect(page.columns == ["code", "name", "born", "photo", "revision"])
            }
            try await client.execute(uri: "/v1/snapshot/authors?schemaVersion=4", method: .get, headers: headers()) {
                response in
                let page = try decode(SnapshotPage.self, response)
                #expect(page.columns.contains("country"))
            }
            try await client.execute(uri: "/v1/snapshot/publishers", method: .get, headers: headers()) { response in
                #expect(response.status == .notFound && errorCode(response) == "unknown_type")
            }
            try await client.execute(uri: "/v1/snapshot/publishers?schemaVersion=4", method: .get, headers: headers()) {
                response in
                #expect(response.status == .ok)
            }
            for (request, name) in [
                (#"{"maxRevision": 0}"#, "name"), (#"{"maxRevision": 0, "schemaVersion": 4}"#, "full_name"),
            ] {
                try await client.execute(uri: "/v1/sync", method: .post, headers: headers(), body: body(request)) {
                    response in
                    let sync = try decode(SyncResponse.self, response)
                    #expect(sync.changeSets.first?["authors"]?.attributes["le-guin"]?[name] == "Ursula K. Le Guin")
                }
            }
            try await client.execute(
                uri: "/v1/sync", method: .post, headers: headers(),
                body: body(#"{"maxRevision": 0, "schemaVersion": 0}"#)
            ) { response in
                #expect(response.status == .badRequest && errorCode(response) == "invalid_parameter")
            }
            try await client.execute(
                uri: "/v1/sync", method: .post, headers: headers(),
                body: body(#"{"maxRevision": 0, "schemaVersion": 9}"#)
            ) { response in
                #expect(response.status == .conflict && errorCode(response) == "unknown_schema_version")
            }
        }
    }

    /// A push without a version is read in the oldest: an old app's edit keeps the new fields.
    @Test func anOldAppsPushKeepsTheFieldsItDoesNotKnow() async throws {
        try await withUpgradedApp { client in
            let push = """
                {"maxRevision": 1, "changeSets": [{"id": "old", "types": ["authors"], "authors": {"update": ["le-guin"],
                  "attributes": {"le-guin": {"name": "U. K. Le Guin", "born": null, "photo": null, "revision": 1}}}}]}
                """
            try await client.execute(
                uri: "/v1/sync", method: .post, headers: headers(token: TestTokens.write), body: body(push)
            ) { response in
                let sync = try decode(SyncResponse.self, response)
                guard case .applied = sync.results.first?.status else {
                    Issue.record("not applied: \(sync.results)")
                    return
                }
                #expect(sync.changeSets.last?["authors"]?.attributes["le-guin"]?["name"] == "U. K. Le Guin")
            }
            try await client.execute(
                uri: "/v1/snapshot/authors?schemaVersion=4", method: .get, headers: headers()
            ) { response in
                let page = try decode(SnapshotPage.self, response)
                #expect(page.rows.first?[3] == "unknown")
            }
        }
    }
}
