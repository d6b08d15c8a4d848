import Foundation
import Hummingbird
import HummingbirdTesting
import SeedSyncDemo
import SeedSyncModel
import SeedSyncServer
import SeedSyncTesting
import Testing

/// `POST /v1/admin/seeds` and `GET /v1/seeds` through the router, on every store.
@Suite struct SeedRouteTests {
    static let sha = String(repeating: "0f", count: 32)

    @Test func seedsAreRegisteredByAdminsAndListedToReaders() async throws {
        for backend in StoreBackend.tested {
            try await backend.withDemoStore(events: 20, locations: 3) { store in
                try await ChangeGenerator.mutate(store, changes: 5, seed: 1)
                let app = try await buildApplication(store: store, configuration: testConfiguration())
                try await app.test(.router) { client in
                    let registration = #"{"sha256": "\#(Self.sha)", "revision": 4, "schemaVersion": 1}"#
                    try await client.execute(
                        uri: "/v1/admin/seeds", method: .post, headers: headers(), body: body(registration)
                    ) { response in
                        #expect(response.status == .forbidden)
                    }
                    try await client.execute(
                        uri: "/v1/admin/seeds", method: .post, headers: headers(token: TestTokens.admin),
                        body: body(registration)
                    ) { response in
                        #expect(response.status == .ok)
                        let seed = try decode(RegisteredSeed.self, response)
                        #expect(seed.sha256 == Self.sha && seed.revision == 4 && seed.retiredAt == nil)
                    }
                    try await client.execute(uri: "/v1/seeds", method: .get, headers: headers()) { response in
                        let list = try decode(SeedList.self, response)
                        #expect(list.seeds.map(\.revision) == [4])
                    }
                    for (body, status, code) in [
                        (#"{"sha256": "nope", "revision": 4, "schemaVersion": 1}"#, 422, "invalid_registration"),
                        (#"{"sha256": "\#(Self.sha)", "revision": 4.5, "schemaVersion": 1}"#, 400, "malformed_json"),
                        (
                            #"{"sha256": "\#(Self.sha)", "revision": 5, "schemaVersion": 1}"#, 422,
                            "invalid_registration"
                        ),
                        (
                            #"{"sha256": "\#(String(repeating: "1", count: 64))", "revision": 99, "schemaVersion": 1}"#,
                            409, "revision_ahead"
                        ),
                    ] {
                        try await client.execute(
                            uri: "/v1/admin/seeds", method: .post, headers: headers(token: TestTokens.admin),
                            body: SeedSyncServerTests.body(body)
                        ) { response in
                            #expect(response.status.code == status && errorCode(response) == code, "\(body)")
                        }
                    }
                }
            }
        }
    }
}
