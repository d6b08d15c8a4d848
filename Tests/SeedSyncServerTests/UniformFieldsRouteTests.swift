import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import SeedSyncDemo
import SeedSyncModel
import SeedSyncServer
import SeedSyncStore
import SeedSyncTesting
import Testing

/// `GET /v1/snapshot/{type}/uniform` on every store: the fields that hold one value, kept and
/// cached as a page is under `notBefore`, its parameters checked.
@Suite struct UniformFieldsRouteTests {
    @Test(arguments: StoreBackend.tested) func theAnswerIsKeptAndCachedAsAPage(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            // One book: each of its fields holds one value.
            try await store.commit(Fixtures.catalogCreation(author: "le-guin", book: 1))
            let app = try await buildApplication(store: store, configuration: testConfiguration())
            try await app.test(.router) { client in
                let fields = "price,pages"
                let expected = UniformFields(type: "books", revision: 1, values: ["price": 12.0, "pages": .null])
                let first = try await Self.get(client, "books/uniform?fields=\(fields)&schemaVersion=3&notBefore=1")
                #expect(first.status == .ok)
                #expect(first.answer == expected)
                #expect(
                    first.cacheControl?.hasPrefix("private, max-age=") == true
                        && first.cacheControl != "private, max-age=0")
                // A write since: an answer kept from before it still serves notBefore=1 ...
                try await store.commit(
                    ChangeSet(changes: [
                        TypeChanges(
                            type: "books", create: [2],
                            attributes: ["2": ["title": "Other", "price": 3.5, "in_stock": false, "pages": 10]])
                    ]))
                let kept = try await Self.get(client, "books/uniform?fields=\(fields)&schemaVersion=3&notBefore=1")
                #expect(kept.answer == expected && kept.tag == first.tag)
                // ... but not a client at the newer revision, nor one that names no notBefore.
                let revision = try await store.revisions().revision
                let fresh = try await Self.get(
                    client, "books/uniform?fields=\(fields)&schemaVersion=3&notBefore=\(revision)")
                #expect(fresh.answer == UniformFields(type: "books", revision: revision, values: [:]))
                let unnamed = try await Self.get(client, "books/uniform?fields=\(fields)&schemaVersion=3")
                #expect(unnamed.answer?.revision == revision && unnamed.cacheControl == "private, max-age=0")
                // The entity tag answers a revalidation with 304.
                try await client.execute(
                    uri: "/v1/snapshot/books/uniform?fields=\(fields)&schemaVersion=3&notBefore=\(revision)",
                    method: .get, headers: headers(token: TestTokens.read, [.ifNoneMatch: fresh.tag ?? ""])
                ) { response in #expect(response.status == .notModified) }
                // Bad requests.
                for (query, status) in [
                    ("books/uniform?schemaVersion=3", HTTPResponse.Status.badRequest),
                    ("books/uniform?fields=,", .badRequest),
                    ("books/uniform?fields=isbn", .badRequest),
                    ("films/uniform?fields=title", .notFound),
                    ("books/uniform?fields=title&notBefore=\(revision + 1)", .conflict),
                ] {
                    #expect(try await Self.get(client, query).status == status, "\(query)")
                }
            }
        }
    }

    private static func get(_ client: any TestClientProtocol, _ path: String) async throws -> (
        status: HTTPResponse.Status, answer: UniformFields?, cacheControl: String?, tag: String?
    ) {
        try await client.execute(uri: "/v1/snapshot/\(path)", method: .get, headers: headers()) { response in
            let answer =
                response.status == .ok
                ? try UniformFields(json: JSONParser.parse(Array(response.body.readableBytesView))) : nil
            return (response.status, answer, response.headers[.cacheControl], response.headers[.eTag])
        }
    }
}
