import Foundation
import SeedSyncModel
import SeedSyncSQLiteStore
import SeedSyncStore
import SeedSyncTesting
import Testing

@Suite struct CommitTests {
    @Test(arguments: StoreBackend.tested) func commitsAssignConsecutiveRevisionsAndLogNormalizedChangeSets(
        backend: StoreBackend
    ) async throws {
        try await backend.withStore { store in
            #expect(try await store.commit(Fixtures.catalogCreation()) == 1)
            let update = ChangeSet(changes: [
                TypeChanges(
                    type: "books", update: [1],
                    attributes: ["1": ["title": "The Dispossessed", "price": 9.5, "in_stock": false, "pages": 387]])
            ])
            #expect(try await store.commit(update) == 2)

            let feed = try await store.changeFeed(after: 0, limit: 10, byteBudget: 1 << 20)
            #expect(feed.maxRevision == 2)
            #expect(feed.hasMore == false)
            let logged = try feed.changeSets.map { try JSONDecoder().decode(ChangeSet.self, from: Data($0.json)) }
            #expect(logged.map(\.revision) == [1, 2])
            let book = try #require(logged[0]["books"]?.attributes["1"])
            // JSON does not tell 12 from 12.0: readers normalize by the field's type.
            #expect(book["price"].flatMap(FieldType.real.normalize) == .double(12))
            #expect(book["pages"] == .null)
            #expect(book["revision"] == 1)
            #expect(logged[1]["books"]?.attributes["1"]?["revision"] == 2)

            let contents = try await Fixtures.contents(of: store)
            // The update left author_code out, so it is null now.
            #expect(contents["books"] == [[1, "The Dispossessed", .null, 9.5, false, 387, 2]])
            #expect(contents["authors"] == [["le-guin", "Ursula K. Le Guin", "1929-10-21T00:00:00Z", "AAEC", 1]])
        }
    }

    @Test(arguments: [
        (
            #"{"types":["authors"],"authors":{"create":["le-guin"],"attributes":{"le-guin":{"name":"Again"}}}}"#,
            "authors[le-guin] cannot be created: it already exists"
        ),
        (
            #"{"types":["books"],"books":{"update":[99],"attributes":{"99":{"title":"T","price":1,"in_stock":true}}}}"#,
            "books[99] cannot be updated: it does not exist"
        ),
        (#"{"types":["books"],"books":{"delete":[99]}}"#, "books[99] cannot be deleted: it does not exist"),
        (
            #"{"types":["books"],"books":{"create":[2],"attributes":{"2":{"title":"T","price":1,"in_stock":true,"author_code":"nobody"}}}}"#,
            "books[2].author_code references authors[nobody], which does not exist"
        ),
        (
            #"{"types":["authors"],"authors":{"delete":["le-guin"]}}"#,
            "authors[le-guin] cannot be deleted: books[1].author_code references it"
        ),
        (
            #"{"types":["books","authors"],"books":{"create":[2],"attributes":{"2":{"title":"T","price":1,"in_stock":true,"author_code":"x"}}},"authors":{"delete":["le-guin"]}}"#,
            "references authors[x]"
        ),
        (
            #"{"types":["books"],"books":{"create":[4611686018427387904],"attributes":{"4611686018427387904":{"title":"T","price":1,"in_stock":true}}}}"#,
            "books[4611686018427387904] cannot be created: integer keys end at 4611686018427387903"
        ),
        (
            #"{"types":["books"],"books":{"create":[-5],"attributes":{"-5":{"title":"T","price":1,"in_stock":true}}}}"#,
            "books[-5] cannot be created: integer keys of stored rows are 0 or more"
        ),
    ])
    func rejectedChangeSetsWriteNothing(json: String, message: String) async throws {
        for backend in StoreBackend.tested {
            try await expectRejection(json: json, message: message, backend: backend)
        }
    }

    private func expectRejection(json: String, message: String, backend: StoreBackend) async throws {
        try await backend.withStore { store in
            try await store.commit(Fixtures.catalogCreation())
            let before = try await Fixtures.contents(of: store)
            let changeSet = try JSONDecoder().decode(ChangeSet.self, from: Data(json.utf8))
            await #expect {
                try await store.commit(changeSet)
            } throws: { error in
                (error as? SyncStoreError)?.code == .invalidChangeSet && "\(error)".contains(message)
            }
            #expect(try await Fixtures.contents(of: store) == before)
            #expect(try await store.schemaInfo().revision == 1)
            #expect(try await store.changeFeed(after: 0, limit: 10, byteBudget: 1 << 20).changeSets.count == 1)
        }
    }

    /// The largest key a commit may create, 2^62 − 1, is taken, and an app's pushed row still
    /// gets the next key.
    @Test(arguments: StoreBackend.tested) func theLargestCommittedKeyLeavesKeysForPushedRows(backend: StoreBackend)
        async throws
    {
        try await backend.withStore { store in
            try await store.commit(Fixtures.catalogCreation())
            try await store.commit(
                try JSONDecoder().decode(
                    ChangeSet.self,
                    from: Data(
                        #"{"types":["books"],"books":{"create":[4611686018427387903],"attributes":{"4611686018427387903":{"title":"Last","price":1,"in_stock":true}}}}"#
                            .utf8)))
            let pushed = try PushedChangeSet(
                json: JSONParser.parse(
                    Array(
                        #"{"id": "after-last", "types": ["books"], "books": {"create": [-1], "attributes": {"-1": {"title": "New", "price": 2, "in_stock": true}}}}"#
                            .utf8)))
            let result = try await store.push(pushed, retention: .seconds(86_400))
            #expect(result.status == .applied(revision: 3, keys: ["books": ["-1": 4_611_686_018_427_387_904]]))
        }
    }

    @Test(arguments: StoreBackend.tested) func aChangeSetMayCreateTheRowItReferencesAndDeleteTheLastReferrer(
        backend: StoreBackend
    ) async throws {
        try await backend.withStore { store in
            // The book comes first in `types` but references an author created in the same change set.
            let creation = Fixtures.catalogCreation()
            try await store.commit(ChangeSet(changes: creation.changes.reversed()))
            let removal = ChangeSet(changes: [
                TypeChanges(type: "authors", delete: ["le-guin"]),
                TypeChanges(type: "books", delete: [1]),
            ])
            #expect(try await store.commit(removal) == 2)
            #expect(try await Fixtures.contents(of: store) == ["authors": [], "books": []])
        }
    }

    @Test(arguments: StoreBackend.tested) func unknownTypesAreReportedAsSuch(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            await #expect { try await store.snapshotPage(of: "nope", after: nil, limit: 1) } throws: {
                ($0 as? SyncStoreError)?.code == .unknownType
            }
            await #expect {
                try await store.commit(ChangeSet(changes: [TypeChanges(type: "nope", delete: [1])]))
            } throws: {
                ($0 as? SyncStoreError)?.code == .invalidChangeSet
            }
        }
    }
}
