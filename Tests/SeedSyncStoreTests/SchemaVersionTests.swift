import Foundation
import SeedSyncModel
import SeedSyncPostgres
import SeedSyncSQLiteStore
import SeedSyncStore
import SeedSyncTesting
import Testing

/// Schema upgrades on every store: clients of the old and the new version read and push side by
/// side, each in its own version, across the revision of the upgrade.
@Suite struct SchemaVersionTests {
    static let day = Duration.seconds(86_400)

    /// Revisions 1 and 2 written in version 3, the upgrade at 2, revision 3 written in version 4.
    private func upgradedStore(
        _ backend: StoreBackend, _ body: @escaping @Sendable (any MaintainedSyncStore) async throws -> Void
    ) async throws {
        try await backend.withStore { store in
            try await store.commit(Fixtures.catalogCreation())
            try await store.commit(
                ChangeSet(changes: [
                    TypeChanges(
                        type: "authors", update: ["le-guin"],
                        attributes: ["le-guin": ["name": "Ursula", "born": .null, "photo": "AAEC"]])
                ]))
            let upgrade = try await backend.upgrade(
                store, to: Fixtures.catalogSchemaV4, renaming: Fixtures.catalogRenames,
                alterations: Fixtures.catalogAlterations)
            #expect(upgrade.version.revision == 2 && upgrade.history.versions.map(\.number) == [3, 4])
            try await store.commit(
                ChangeSet(changes: [
                    TypeChanges(type: "publishers", create: [1], attributes: ["1": ["name": "Ace"]]),
                    TypeChanges(
                        type: "authors", update: ["le-guin"],
                        attributes: ["le-guin": ["full_name": "Ursula K. Le Guin", "born": .null, "country": "US"]]),
                    TypeChanges(
                        type: "books", update: [1],
                        attributes: [
                            "1": [
                                "title": "The Dispossessed", "author_code": "le-guin", "price": 12, "in_stock": true,
                                "subtitle": "An Ambiguous Utopia", "publisher_id": 1,
                            ]
                        ]),
                ]))
            try await body(store)
        }
    }

    @Test(arguments: StoreBackend.tested) func everyVersionReadsTheWholeHistoryInItsOwnShape(backend: StoreBackend)
        async throws
    {
        try await upgradedStore(backend) { store in
            let old = try await changeSets(of: store, version: 3)
            let new = try await changeSets(of: store, version: 4)
            #expect(old.map(\.revision) == [1, 2, 3] && new.map(\.revision) == [1, 2, 3])
            // Written in 3, read in 4: the renamed field under its new name, the new ones' defaults.
            #expect(
                new[0]["authors"]?.attributes["le-guin"]
                    == [
                        "full_name": "Ursula K. Le Guin", "born": "1929-10-21T00:00:00Z", "country": "unknown",
                        "revision": 1,
                    ])
            #expect(new[0]["books"]?.attributes["1"]?["subtitle"] == .null)
            // Written in 4, read in 3: the old name, the dropped field null, the new type left out.
            #expect(old[2].types == ["authors", "books"])
            #expect(
                old[2]["authors"]?.attributes["le-guin"]
                    == ["name": "Ursula K. Le Guin", "born": .null, "photo": .null, "revision": 3])
            #expect(
                old[2]["books"]?.attributes["1"]?.keys.sorted() == [
                    "author_code", "in_stock", "pages", "price", "revision", "title",
                ])
            #expect(new[2]["books"]?.attributes["1"]?["publisher_id"] == 1)
            // Without a version, the newest.
            #expect(try await changeSets(of: store, version: nil) == new)
            // Pages and schemas of either version.
            let page3 = try await store.snapshotPage(of: "authors", after: nil, limit: 10, version: 3)
            let page4 = try await store.snapshotPage(of: "authors", after: nil, limit: 10, version: 4)
            #expect(page3.columns == ["code", "name", "born", "photo", "revision"])
            #expect(page3.rows == [["le-guin", "Ursula K. Le Guin", .null, .null, 3]])
            #expect(page4.rows == [["le-guin", "Ursula K. Le Guin", .null, "US", 3]])
            await #expect {
                try await store.snapshotPage(of: "publishers", after: nil, limit: 10, version: 3)
            } throws: {
                ($0 as? SyncStoreError)?.code == .unknownType
            }
            let info3 = try await store.schemaInfo(version: 3)
            #expect(info3.types == Fixtures.catalogSchema.types && info3.servedVersions == [3, 4])
            #expect(info3.rowCounts == ["authors": 1, "books": 1] && info3.revision == 3)
            #expect(try await store.schemaInfo().schemaVersion == 4)
            await #expect { try await store.changeFeed(after: 0, limit: 10, byteBudget: 1 << 20, version: 5) } throws: {
                ($0 as? SyncStoreError)?.code == .unknownSchemaVersion && "\($0)".contains("versions served: 3, 4")
            }
        }
    }

    /// A client of version 3 updates a row: the fields it does not know keep their values. Its
    /// creates get their defaults, and a conflict answers in its version.
    @Test(arguments: StoreBackend.tested) func anOldClientsPushesArePartialUpdates(backend: StoreBackend) async throws {
        try await upgradedStore(backend) { store in
            let result = try await store.push(
                pushed(
                    """
                    {"id": "old-app", "types": ["authors"], "authors": {"create": ["tolkien"], "update": ["le-guin"], "attributes": {
                      "tolkien": {"name": "J. R. R. Tolkien", "born": null, "photo": null},
                      "le-guin": {"name": "U. K. Le Guin", "born": null, "photo": "AAEC", "revision": 3}}}}
                    """), retention: Self.day, version: 3)
            guard case .applied(let revision, _) = result.status else {
                Issue.record("not applied: \(result)")
                return
            }
            let page = try await store.snapshotPage(of: "authors", after: nil, limit: 10, version: 4)
            #expect(
                page.rows == [
                    ["le-guin", "U. K. Le Guin", .null, "US", .int(revision)],
                    ["tolkien", "J. R. R. Tolkien", .null, "unknown", .int(revision)],
                ])
            // A client of version 4 sees the push in its shape, one of version 3 in its own.
            let logged4 = try await changeSets(of: store, version: 4).last!
            let logged3 = try await changeSets(of: store, version: 3).last!
            #expect(logged4["authors"]?.attributes["le-guin"]?["country"] == "US")
            #expect(logged3["authors"]?.attributes["le-guin"]?["name"] == "U. K. Le Guin")
            let stale = try await store.push(
                pushed(
                    """
                    {"id": "stale", "types": ["authors"], "authors": {"update": ["le-guin"], "attributes": {
                      "le-guin": {"name": "Stale", "born": null, "photo": null, "revision": 3}}}}
                    """), retention: Self.day, version: 3)
            guard case .conflict(let current) = stale.status else {
                Issue.record("not a conflict: \(stale)")
                return
            }
            #expect(
                current["authors"]?.attributes["le-guin"]
                    == ["name": "U. K. Le Guin", "born": .null, "photo": .null, "revision": .int(revision)])
            // A field of version 4 in a push of version 3 is refused in version 3's words.
            let wrong = try await store.push(
                pushed(
                    """
                    {"id": "wrong", "types": ["authors"], "authors": {"create": ["x"], "attributes": {
                      "x": {"full_name": "X", "name": "X"}}}}
                    """), retention: Self.day, version: 3)
            guard case .rejected(_, let message) = wrong.status else {
                Issue.record("not rejected: \(wrong)")
                return
            }
            #expect(message.contains("unknown field 'full_name'"))
        }
    }

    @Test(arguments: StoreBackend.tested) func aRefusedUpgradeChangesNothing(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            try await store.commit(Fixtures.catalogCreation())
            var retyped = Fixtures.catalogSchema
            retyped.schemaVersion = 4
            retyped.types[1].fields[2].type = .text
            await #expect {
                try await backend.upgrade(store, to: retyped, alterations: "SELECT 1")
            } throws: { ($0 as? SchemaUpgradeError)?.code == .fieldChanged && "\($0)".contains("books.price") }
            #expect(try await store.schemaHistory().versions.map(\.number) == [3])
            #expect(try await store.schemaInfo().schemaVersion == 3)
            #expect(
                try await store.changeFeed(after: 0, limit: 10, byteBudget: 1 << 20, version: 3).changeSets.count == 1)
        }
    }

    /// A reference dropped: the embedded store rebuilds the table (SQLite cannot drop a column a
    /// foreign key names); both stores go on serving version 4 with the field null.
    @Test(arguments: StoreBackend.tested) func aDroppedReferenceIsServedAsNull(backend: StoreBackend) async throws {
        try await upgradedStore(backend) { store in
            var v5 = Fixtures.catalogSchemaV4
            v5.schemaVersion = 5
            v5.types[1].fields.removeAll { $0.name == "publisher_id" }
            let upgrade = try await backend.upgrade(
                store, to: v5, alterations: "ALTER TABLE public.books DROP COLUMN publisher_id")
            #expect(upgrade.changes == [.fieldDropped(type: "books", field: "publisher_id")])
            let page = try await store.snapshotPage(of: "books", after: nil, limit: 10, version: 4)
            #expect(page.rows.first?[7] == .null && page.rows.first?[6] == "An Ambiguous Utopia")
            #expect(
                try await store.snapshotPage(of: "books", after: nil, limit: 10).columns.contains("publisher_id")
                    == false)
            // The kept rows and references are whole: a book can still reference its author.
            try await store.commit(
                ChangeSet(changes: [
                    TypeChanges(
                        type: "books", create: [2],
                        attributes: ["2": ["title": "Lathe", "author_code": "le-guin", "price": 9, "in_stock": true]])
                ]))
            #expect(try await store.snapshotPage(of: "books", after: nil, limit: 10).rows.count == 2)
        }
    }

    /// Another server on the same database serves the new version from its next request on.
    @Test(arguments: StoreBackend.tested) func anotherServerSeesTheUpgradeAtOnce(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            try await store.commit(Fixtures.catalogCreation())
            try await withSecondStore(of: store) { other in
                #expect(try await other.schemaHistory().versions.count == 1)
                try await backend.upgrade(
                    store, to: Fixtures.catalogSchemaV4, renaming: Fixtures.catalogRenames,
                    alterations: Fixtures.catalogAlterations)
                #expect(try await other.schemaInfo().schemaVersion == 4)
                let page = try await other.snapshotPage(of: "authors", after: nil, limit: 10, version: 4)
                #expect(page.columns.contains("country"))
                try await other.commit(
                    ChangeSet(changes: [
                        TypeChanges(type: "publishers", create: [7], attributes: ["7": ["name": "Tor"]])
                    ]))
                #expect(try await changeSets(of: store, version: 4).last?["publishers"]?.create == [7])
            }
        }
    }

    private func changeSets(of store: any SyncStore, version: Int?) async throws -> [ChangeSet] {
        try await store.changeFeed(after: 0, limit: 100, byteBudget: 1 << 24, version: version).changeSets.map {
            try ChangeSet(json: JSONParser.parse($0.json))
        }
    }

    private func pushed(_ json: String) throws -> PushedChangeSet {
        try PushedChangeSet(json: JSONParser.parse(Array(json.utf8)))
    }
}
