import Foundation
import SeedSyncDemo
import SeedSyncModel
import SeedSyncSQLiteStore
import SeedSyncStore
import SeedSyncTesting
import Testing

@Suite struct ReadingTests {
    @Test(arguments: StoreBackend.tested) func snapshotPagesWalkEveryRowInKeyOrder(backend: StoreBackend) async throws {
        try await backend.withDemoStore(events: 250, locations: 7) { store in
            let first = try await store.snapshotPage(of: "events", after: nil, limit: 100)
            #expect(first.revision == 1)
            #expect(
                first.columns == [
                    "id", "title", "starts_at", "ends_at", "location_id", "capacity", "cancelled", "description",
                    "revision",
                ])
            #expect(first.rows.count == 100)
            #expect(first.next == 100)
            let last = try await store.snapshotPage(of: "events", after: 200, limit: 100)
            #expect(last.rows.map { $0[0] } == (201...250).map { JSONValue.int($0) })
            #expect(last.next == .null)
            // A page that ends exactly at the last row already says it is the last.
            let exact = try await store.snapshotPage(of: "events", after: 150, limit: 100)
            #expect(exact.rows.count == 100)
            #expect(exact.next == .null)
            let all = try await Fixtures.contents(of: store, pageSize: 33)
            #expect(all["events"]?.count == 250)
            #expect(all["locations"]?.count == 7)
        }
    }

    @Test(arguments: StoreBackend.tested) func textKeysPageInByteOrder(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let names = ["b", "a", "B", "é", "aa"]
            try await store.commit(
                ChangeSet(changes: [
                    TypeChanges(
                        type: "authors", create: names.map(JSONValue.string),
                        attributes: Dictionary(uniqueKeysWithValues: names.map { ($0, ["name": .string($0)]) }))
                ]))
            let page = try await store.snapshotPage(of: "authors", after: "B", limit: 2)
            #expect(page.rows.map { $0[0] } == ["a", "aa"])
            #expect(page.next == "aa")
            let rest = try await store.snapshotPage(of: "authors", after: "aa", limit: 10)
            #expect(rest.rows.map { $0[0] } == ["b", "é"])
        }
    }

    @Test(arguments: StoreBackend.tested) func changeFeedHonoursLimitAndByteBudget(backend: StoreBackend) async throws {
        try await backend.withDemoStore { store in
            try await ChangeGenerator.mutate(store, changes: 30, seed: 3)
            let limited = try await store.changeFeed(after: 1, limit: 10, byteBudget: 1 << 20)
            #expect(limited.changeSets.map(\.revision) == Array(2...11))
            #expect(limited.maxRevision == 11)
            #expect(limited.hasMore)
            // Revisions read before and revisions not read yet, in one answer.
            let whole = try await store.changeFeed(after: 1, limit: 100, byteBudget: 1 << 20)
            #expect(whole.changeSets.map(\.revision) == Array(2...31))
            #expect(Array(whole.changeSets.prefix(10)) == limited.changeSets)
            #expect(whole.hasMore == false)
            let tight = try await store.changeFeed(after: 1, limit: 100, byteBudget: 1)
            #expect(tight.changeSets.map(\.revision) == [2])
            #expect(tight.hasMore)
            let rest = try await store.changeFeed(after: 21, limit: 100, byteBudget: 1 << 20)
            #expect(rest.changeSets.map(\.revision) == Array(22...31))
            #expect(rest.hasMore == false)
            let none = try await store.changeFeed(after: 31, limit: 100, byteBudget: 1 << 20)
            #expect(none.changeSets.isEmpty)
            #expect(none.maxRevision == 31)
            #expect(none.hasMore == false)
        }
    }

    @Test(arguments: StoreBackend.tested) func changeFeedRefusesExpiredAndFutureRevisions(backend: StoreBackend)
        async throws
    {
        try await backend.withDemoStore { store in
            try await ChangeGenerator.mutate(store, changes: 5, seed: 3)
            await #expect { try await store.changeFeed(after: 0, limit: 10, byteBudget: 1 << 20) } throws: { error in
                let error = error as? SyncStoreError
                return error?.code == .historyExpired && error?.minRevision == 1
            }
            await #expect { try await store.changeFeed(after: 7, limit: 10, byteBudget: 1 << 20) } throws: { error in
                let error = error as? SyncStoreError
                return error?.code == .revisionAhead && error?.revision == 6
            }
        }
    }
}

@Suite struct PageJSONTests {
    /// The store writes page JSON straight from its cursor (and reads its pages back from it): every
    /// field type, null, escapes, non-ASCII text, text keys in byte order and page boundaries.
    @Test(arguments: StoreBackend.tested) func pageJSONHoldsTheStoredValues(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            try await store.commit(Fixtures.catalogCreation(author: "le-guin", book: 1))
            let odd = "a\"b\\c\n\u{1}é"
            try await store.commit(
                ChangeSet(changes: [
                    TypeChanges(
                        type: "authors", create: [.string(odd)],
                        attributes: [odd: ["name": "Tab\there", "born": .null, "photo": .null]]),
                    TypeChanges(
                        type: "books", create: [2, 3],
                        attributes: [
                            "2": ["title": "", "author_code": .null, "price": 0.1, "in_stock": false, "pages": -7],
                            "3": [
                                "title": "中文", "author_code": "le-guin", "price": 1e-7, "in_stock": true,
                                "pages": .int(.max),
                            ],
                        ]),
                ]))
            let authors: [[JSONValue]] = [
                [.string(odd), "Tab\there", .null, .null, 2],
                ["le-guin", "Ursula K. Le Guin", "1929-10-21T00:00:00Z", "AAEC", 1],
            ]
            let books: [[JSONValue]] = [
                [1, "The Dispossessed", "le-guin", 12.0, true, .null, 1],
                [2, "", .null, 0.1, false, -7, 2],
                [3, "中文", "le-guin", 1e-7, true, .int(.max), 2],
            ]
            for (type, rows) in [("authors", authors), ("books", books)] {
                for limit in [1, 2, 3, 10] {
                    let json = try await store.snapshotPageJSON(of: type, after: nil, limit: limit)
                    // JSONDecoder would read the real 12.0 as the integer 12; the parser keeps it a real.
                    let page = try SnapshotPage(json: JSONParser.parse(json))
                    #expect(page.rows == Array(rows.prefix(limit)))
                    #expect(page.next == (limit < rows.count ? rows[limit - 1][0] : .null))
                    #expect(try await store.snapshotPage(of: type, after: nil, limit: limit) == page)
                }
            }
            let rest = try await store.snapshotPage(of: "books", after: 1, limit: 1)
            #expect(rest.rows == [books[1]] && rest.next == 2)
        }
    }
}

/// `uniformFields`: which fields hold one value in every row a grant reads, in a served version,
/// read with the revision (what a migrating client fills in instead of downloading).
@Suite struct UniformFieldsTests {
    @Test(arguments: StoreBackend.tested) func fieldsOfOneValueInEveryRowAreListedWithIt(backend: StoreBackend)
        async throws
    {
        try await backend.withStore { store in
            let all = ["title", "author_code", "price", "in_stock", "pages"]
            // No rows: every field, with its absent value.
            let empty = try await store.uniformFields(of: "books", fields: all, version: nil, grant: .all)
            #expect(empty.values == Dictionary(uniqueKeysWithValues: all.map { ($0, JSONValue.null) }))
            try await store.commit(
                ChangeSet(changes: [
                    TypeChanges(
                        type: "books", create: [1, 2, 3],
                        attributes: Dictionary(
                            uniqueKeysWithValues: (1...3).map { key in
                                (
                                    String(key),
                                    [
                                        "title": .string("Book \(key)"), "author_code": .null, "price": 9.5,
                                        "in_stock": .bool(key != 2), "pages": .null,
                                    ] as [String: JSONValue]
                                )
                            }))
                ]))
            let read = try await store.uniformFields(of: "books", fields: all, version: nil, grant: .all)
            let revision = try await store.revisions().revision
            #expect(read.type == "books" && read.revision == revision)
            #expect(read.values == ["author_code": .null, "price": 9.5, "pages": .null])
            // One row that differs, the last in key order, takes a field off the list.
            try await store.commit(
                ChangeSet(changes: [
                    TypeChanges(
                        type: "books", update: [3],
                        attributes: [
                            "3": [
                                "title": "Book 3", "author_code": .null, "price": 9.75, "in_stock": true, "pages": 12,
                            ]
                        ])
                ]))
            let after = try await store.uniformFields(
                of: "books", fields: ["price", "pages", "author_code"], version: nil, grant: .all)
            #expect(after.values == ["author_code": .null])
            await #expect {
                try await store.uniformFields(of: "books", fields: ["isbn"], version: nil, grant: .all)
            } throws: { ($0 as? SyncStoreError)?.code == .unknownField }
            await #expect {
                try await store.uniformFields(of: "films", fields: ["title"], version: nil, grant: .all)
            } throws: { ($0 as? SyncStoreError)?.code == .unknownType }
        }
    }

    /// A reader of some scope values: uniform over its rows alone.
    @Test(arguments: StoreBackend.tested) func aGrantReadsItsScopeValuesRowsAlone(backend: StoreBackend) async throws {
        try await backend.withStore(Fixtures.clubsSchema) { store in
            try await store.commit(Fixtures.clubsCreation(teams: 1...2, eventsPerTeam: 3))
            let one = try await store.uniformFields(
                of: "events", fields: ["team_id", "venue_id"], version: nil, grant: .only([1]))
            #expect(one.values == ["team_id": 1, "venue_id": 1])
            let every = try await store.uniformFields(
                of: "events", fields: ["team_id", "venue_id"], version: nil, grant: .all)
            #expect(every.values == ["venue_id": 1])
        }
    }

    /// An older version's field the newest dropped holds its absent value in every row; the others
    /// are read from their newest columns.
    @Test(arguments: StoreBackend.tested) func aFieldTheNewestVersionDroppedHoldsItsAbsentValue(backend: StoreBackend)
        async throws
    {
        try await backend.withStore { store in
            try await store.commit(Fixtures.catalogCreation(author: "le-guin", book: 1))
            var newer = Fixtures.catalogSchema
            newer.schemaVersion += 1
            let books = newer.types.firstIndex { $0.name == "books" }!
            newer.types[books].fields.removeAll { $0.name == "pages" }
            try await backend.upgrade(store, to: newer, alterations: "ALTER TABLE public.books DROP COLUMN pages")
            let old = try await store.uniformFields(
                of: "books", fields: ["pages", "in_stock"], version: Fixtures.catalogSchema.schemaVersion, grant: .all)
            #expect(old.values == ["pages": .null, "in_stock": true])
        }
    }
}
