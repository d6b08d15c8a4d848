import Foundation
import GRDB
import SeedSyncDemo
import SeedSyncModel
import SeedSyncPostgres
import SeedSyncSQLiteStore
import SeedSyncStore
import SeedSyncTesting
import Testing

/// Pushed change sets (write-back), on every store: one body per backend.
@Suite struct PushTests {
    static let day = Duration.seconds(86_400)

    @Test(arguments: StoreBackend.tested) func createsGetRealKeysAndReferencesToTemporaryKeysFollow(
        backend: StoreBackend
    ) async throws {
        try await backend.withDemoStore(events: 30, locations: 5) { store in
            let before = try await store.schemaInfo().revision
            let event = try #require(try await store.keys(of: "events").first)
            let current = try #require(try await Fixtures.contents(of: store)["events"]?.first)
            let result = try await store.push(
                pushed(
                    """
                    {"id": "new-gig", "types": ["locations", "events"],
                     "locations": {"create": [-1], "attributes": {"-1": {"name": "Hall", "city": "Oslo", "latitude": 59.9, "longitude": 10.7}}},
                     "events": {"create": [-1, -2], "update": [\(event.keyString!)], "attributes": {
                       "-1": {"title": "Gig", "starts_at": "2026-12-01T20:00:00Z", "location_id": -1, "capacity": 100, "cancelled": false},
                       "-2": {"title": "Encore", "starts_at": "2026-12-01T23:00:00Z", "location_id": -1, "capacity": 10, "cancelled": false},
                       "\(event.keyString!)": {"title": "Moved", "starts_at": "2026-12-02T20:00:00Z", "location_id": -1, "capacity": 5, "cancelled": true, "revision": \(current.last!.keyString!)}}}}
                    """), retention: Self.day)
            guard case .applied(let revision, let keys) = result.status else {
                Issue.record("not applied: \(result)")
                return
            }
            #expect(result.id == "new-gig" && revision == before + 1)
            let location = try #require(keys["locations"]?["-1"])
            #expect(location == .int(6), "after the largest key, 5")
            #expect(
                keys["events"]?["-1"] == .int(31) && keys["events"]?["-2"] == .int(32), "temporary keys are per type")
            let contents = try await Fixtures.contents(of: store)
            let events = Dictionary(uniqueKeysWithValues: try #require(contents["events"]).map { ($0[0], $0) })
            #expect(
                events[.int(31)]?[4] == location && events[.int(32)]?[4] == location && events[event]?[4] == location)
            #expect(events[event]?[1] == "Moved" && events[.int(31)]?.last == .int(revision))
            // The logged change set holds the real keys only.
            let logged = try ChangeSet(
                json: JSONParser.parse(
                    try #require(
                        try await store.changeFeed(after: before, limit: 1, byteBudget: 1 << 20).changeSets.first
                    ).json))
            #expect(
                logged["locations"]?.create == [location] && logged["events"]?.create == [31, 32]
                    && logged["events"]?.update == [event])
        }
    }

    @Test(arguments: StoreBackend.tested) func textKeysAndUpToDateDeletesApplyAndDeletedKeysAreNeverGivenAgain(
        backend: StoreBackend
    ) async throws {
        try await backend.withStore { store in
            try await store.commit(Fixtures.catalogCreation())
            let first = try await store.push(
                pushed(
                    #"{"id": "a", "types": ["authors", "books"], "authors": {"create": ["tolkien"], "attributes": {"tolkien": {"name": "J. R. R. Tolkien"}}}, "books": {"create": [-1], "delete": [1], "attributes": {"-1": {"title": "The Hobbit", "author_code": "tolkien", "price": 8, "in_stock": true}, "1": {"revision": 1}}}}"#
                ), retention: Self.day)
            #expect(first.status == .applied(revision: 2, keys: ["books": ["-1": 2]]))
            // Book 2 deleted: a later push must not give its key to a new row.
            try await store.commit(ChangeSet(changes: [TypeChanges(type: "books", delete: [2])]))
            let second = try await store.push(
                pushed(
                    #"{"id": "b", "types": ["books"], "books": {"create": [-1], "attributes": {"-1": {"title": "Again", "price": 1, "in_stock": true}}}}"#
                ), retention: Self.day)
            #expect(second.status == .applied(revision: 4, keys: ["books": ["-1": 3]]))
            #expect(try await Fixtures.contents(of: store)["authors"]?.map(\.[0]) == ["le-guin", "tolkien"])
        }
    }

    @Test(arguments: StoreBackend.tested) func aTypeWithoutKeysLeftRejectsCreatesAndTheStoreGoesOn(
        backend: StoreBackend
    ) async throws {
        try await backend.withStore { store in
            try await store.commit(Fixtures.catalogCreation())
            // A commit cannot create a key this high (above 2^62 − 1): another program can.
            try await Self.insertBehind(
                store, into: "books", columns: "id, title, price, in_stock", values: "\(Int64.max - 1), 'Last', 1, true"
            )
            let book = #"{"title": "New", "price": 1, "in_stock": true}"#
            let one = try await store.push(
                pushed(
                    #"{"id": "one", "types": ["books"], "books": {"create": [-1], "attributes": {"-1": \#(book)}}}"#),
                retention: Self.day)
            guard case .applied(_, let keys) = one.status else {
                Issue.record("not applied: \(one)")
                return
            }
            #expect(keys == ["books": ["-1": .int(Int64.max)]], "the last key is given")
            let two = try await store.push(
                pushed(
                    #"{"id": "two", "types": ["books"], "books": {"create": [-1], "attributes": {"-1": \#(book)}}}"#),
                retention: Self.day)
            guard case .rejected(let code, let message) = two.status else {
                Issue.record("not rejected: \(two)")
                return
            }
            #expect(code == "invalid_change_set" && message.contains("books has no integer keys left"), "\(message)")
            // Nothing was written, and the store still takes other change sets.
            let three = try await store.push(
                pushed(
                    #"{"id": "three", "types": ["authors"], "authors": {"create": ["new"], "attributes": {"new": {"name": "N"}}}}"#
                ), retention: Self.day)
            guard case .applied = three.status else {
                Issue.record("not applied: \(three)")
                return
            }
        }
    }

    /// Inserts a row behind the store's back, as another program would: straight into the
    /// SQLite file (at revision 1), or through PostgreSQL (which captures it).
    static func insertBehind(_ store: any MaintainedSyncStore, into table: String, columns: String, values: String)
        async throws
    {
        if let sqlite = store as? SQLiteSyncStore {
            let queue = try DatabaseQueue(path: sqlite.path)
            defer { try? queue.close() }
            try await queue.write { db in
                try db.execute(sql: "INSERT INTO \(table) (\(columns), revision) VALUES (\(values), 1)")
            }
        } else if let postgres = store as? PostgresSyncStore {
            try await TestPostgres.run("INSERT INTO \(table) (\(columns)) VALUES (\(values))", on: postgres.location)
        }
    }

    @Test(arguments: StoreBackend.tested) func aChangeSetThatBreaksAReferenceByItselfIsRejected(backend: StoreBackend)
        async throws
    {
        try await backend.withStore { store in
            try await store.commit(Fixtures.catalogCreation(author: "tolkien", book: 2))
            let result = try await store.push(
                pushed(
                    #"{"id": "self", "types": ["authors", "books"], "authors": {"delete": ["tolkien"], "attributes": {"tolkien": {"revision": 1}}}, "books": {"create": [-1], "delete": [2], "attributes": {"-1": {"title": "T", "author_code": "tolkien", "price": 1, "in_stock": true}, "2": {"revision": 1}}}}"#
                ), retention: Self.day)
            guard case .rejected(_, let message) = result.status else {
                Issue.record("not rejected: \(result)")
                return
            }
            #expect(message.contains("authors[tolkien]"))
            #expect(try await store.schemaInfo().revision == 1)
        }
    }

    @Test(arguments: StoreBackend.tested) func staleWritesConflictWithTheServersRowsAndWriteNothing(
        backend: StoreBackend
    ) async throws {
        try await backend.withStore { store in
            try await store.commit(Fixtures.catalogCreation())
            try await store.commit(Fixtures.catalogCreation(author: "tolkien", book: 2))
            try await store.commit(
                ChangeSet(changes: [
                    TypeChanges(
                        type: "books", update: [1],
                        attributes: ["1": ["title": "Changed", "price": 1, "in_stock": true]])
                ]))
            try await store.commit(ChangeSet(changes: [TypeChanges(type: "books", delete: [2])]))
            let cases: [(String, [String: [JSONValue]], [String: [JSONValue]])] = [
                // An update based on revision 1 of a row changed at 3.
                (
                    #""books": {"update": [1], "attributes": {"1": {"title": "Mine", "price": 2, "in_stock": false, "revision": 1}}}"#,
                    ["books": [1]], [:]
                ),
                // A delete of a row changed since.
                (#""books": {"delete": [1], "attributes": {"1": {"revision": 1}}}"#, ["books": [1]], [:]),
                // An update of a row deleted since.
                (
                    #""books": {"update": [2], "attributes": {"2": {"title": "Gone", "price": 2, "in_stock": false, "revision": 2}}}"#,
                    [:], ["books": [2]]
                ),
                // A text key created twice.
                (
                    #""authors": {"create": ["tolkien"], "attributes": {"tolkien": {"name": "Another"}}}"#,
                    ["authors": ["tolkien"]], [:]
                ),
            ]
            for (index, (changes, updated, deleted)) in cases.enumerated() {
                let type = changes.contains("\"books\"") ? "books" : "authors"
                let result = try await store.push(
                    pushed(#"{"id": "stale-\#(index)", "types": ["\#(type)"], \#(changes)}"#), retention: Self.day)
                guard case .conflict(let truth) = result.status else {
                    Issue.record("case \(index) not a conflict: \(result)")
                    continue
                }
                #expect(truth.conflict && truth.revision == nil)
                #expect(truth.changes.map(\.type) == [type])
                #expect(
                    truth[type]?.update == updated[type] ?? [] && truth[type]?.delete == deleted[type] ?? [],
                    "case \(index)")
            }
            let truth = try await store.push(pushed(#"{"id": "stale-0", "types": []}"#), retention: Self.day)
            guard case .conflict(let first) = truth.status else {
                Issue.record("the first result is not repeated")
                return
            }
            #expect(
                first["books"]?.attributes["1"] == [
                    "title": "Changed", "author_code": .null, "price": 1.0, "in_stock": true, "pages": .null,
                    "revision": 3,
                ])
            #expect(try await store.schemaInfo().revision == 4, "conflicts take no revision")
            #expect(try await Fixtures.contents(of: store)["books"] == [[1, "Changed", .null, 1.0, true, .null, 3]])
        }
    }

    @Test(arguments: StoreBackend.tested) func brokenReferencesConflictAndShowTheRowsInvolved(backend: StoreBackend)
        async throws
    {
        try await backend.withStore { store in
            try await store.commit(Fixtures.catalogCreation())
            // A delete refused because a row references the row (its revision is right, 1) or for a stale
            // revision (9): either way the kept row comes with the row that references it.
            for (id, revision) in [("drop-author", 1), ("drop-author-stale", 9)] {
                let result = try await store.push(
                    pushed(
                        #"{"id": "\#(id)", "types": ["authors"], "authors": {"delete": ["le-guin"], "attributes": {"le-guin": {"revision": \#(revision)}}}}"#
                    ), retention: Self.day)
                guard case .conflict(let kept) = result.status else {
                    Issue.record("\(id): not a conflict: \(result)")
                    continue
                }
                #expect(kept.types == ["authors", "books"], "\(id)")
                #expect(kept["authors"]?.update == ["le-guin"] && kept["books"]?.update == [1], "\(id)")
            }
            // A reference to a row that is not there: the answer says it is gone.
            let dangling = try await store.push(
                pushed(
                    #"{"id": "dangling", "types": ["books"], "books": {"create": [-1], "attributes": {"-1": {"title": "T", "price": 1, "in_stock": true, "author_code": "nobody"}}}}"#
                ), retention: Self.day)
            guard case .conflict(let gone) = dangling.status else {
                Issue.record("not a conflict: \(dangling)")
                return
            }
            #expect(gone.types == ["authors"] && gone["authors"]?.delete == ["nobody"])
            #expect(try await store.schemaInfo().revision == 1)
        }
    }

    @Test(arguments: StoreBackend.tested) func aChangeSetIdIsAppliedOnceEvenWhenPushedConcurrently(
        backend: StoreBackend
    ) async throws {
        try await backend.withStore { store in
            try await store.commit(Fixtures.catalogCreation())
            let push = try pushed(
                #"{"id": "once", "types": ["books"], "books": {"create": [-1], "attributes": {"-1": {"title": "New", "price": 3, "in_stock": true}}}}"#
            )
            let results = try await withThrowingTaskGroup(of: PushResult.self) { group in
                for _ in 0..<6 { group.addTask { try await store.push(push, retention: Self.day) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(Set(results).count == 1, "every push of the id answers with the first result")
            #expect(results.first?.status == .applied(revision: 2, keys: ["books": ["-1": 2]]))
            #expect(try await store.schemaInfo().revision == 2)
            #expect(try await store.keys(of: "books") == [1, 2])
            // A retry with other content still gets the first answer and writes nothing.
            let other = try pushed(
                #"{"id": "once", "types": ["books"], "books": {"delete": [1], "attributes": {"1": {"revision": 1}}}}"#)
            #expect(try await store.push(other, retention: Self.day) == results[0])
            #expect(try await store.schemaInfo().revision == 2)
            // Past the retention the id is forgotten.
            _ = try await store.push(pushed(#"{"id": "later", "types": []}"#), retention: .zero)
            guard case .applied(3, _) = try await store.push(push, retention: Self.day).status else {
                Issue.record("a forgotten id is applied again")
                return
            }
        }
    }

    @Test(arguments: StoreBackend.tested) func invalidChangeSetsAreRejectedRecordedAndWriteNothing(
        backend: StoreBackend
    ) async throws {
        try await backend.withStore { store in
            try await store.commit(Fixtures.catalogCreation())
            let cases = [
                (
                    #""books": {"create": [-1], "attributes": {"-1": {"title": "T", "price": 1, "in_stock": true, "colour": "red"}}}"#,
                    "unknown field 'colour'"
                ),
                (
                    #""books": {"create": [7], "attributes": {"7": {"title": "T", "price": 1, "in_stock": true}}}"#,
                    "negative temporary key"
                ),
                (
                    #""books": {"update": [1], "attributes": {"1": {"title": "T", "price": 1, "in_stock": true}}}"#,
                    "needs the revision it was based on"
                ),
                (
                    #""books": {"delete": [1], "attributes": {"1": {"revision": 1, "title": "T"}}}"#,
                    "its revision alone"
                ),
                (
                    #""books": {"update": [-4], "attributes": {"-4": {"title": "T", "price": 1, "in_stock": true, "revision": 1}}}"#,
                    "is a temporary key"
                ),
                (#""books": {"delete": [-4], "attributes": {}}"#, "books[-4] is a temporary key"),
                (
                    #""books": {"update": [1], "attributes": {"1": {"title": "T", "revision": -1}}}"#,
                    "revision -1 is not a revision"
                ),
                (#""books": {"delete": [1], "attributes": {"1": {"revision": "1"}}}"#, "must be the row's revision"),
                (#""books": {}"#, "creates, updates and deletes none of its rows"),
            ]
            for (index, (changes, message)) in cases.enumerated() {
                let push = try pushed(#"{"id": "bad-\#(index)", "types": ["books"], \#(changes)}"#)
                let result = try await store.push(push, retention: Self.day)
                guard case .rejected(let code, let text) = result.status else {
                    Issue.record("case \(index) not rejected: \(result)")
                    continue
                }
                #expect(code == "invalid_change_set" && text.contains(message), "\(text)")
                #expect(try await store.push(push, retention: Self.day) == result, "the rejection is recorded")
            }
            #expect(try await store.schemaInfo().revision == 1)
            #expect(try await Fixtures.contents(of: store)["books"]?.count == 1)
        }
    }

    private func pushed(_ json: String) throws -> PushedChangeSet {
        try PushedChangeSet(json: JSONParser.parse(Array(json.utf8)))
    }
}
