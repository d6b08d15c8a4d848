import Foundation
import GRDB
import SeedSyncModel
import SeedSyncPostgres
import SeedSyncSQLiteStore
import SeedSyncStore
import SeedSyncTesting
import Testing

/// An upgrade is all or nothing on every store: refused whole before anything is written, and a
/// stored version no server can read makes that version unavailable, never the server.
@Suite struct UpgradeSafetyTests {
    /// Version 4 of the catalog with `change` made to it.
    private static func v4(_ change: (inout DatasetSchema) -> Void) -> DatasetSchema {
        var schema = Fixtures.catalogSchema
        schema.schemaVersion = 4
        change(&schema)
        return schema
    }

    private static func type(_ name: String, fields: [Field] = []) -> EntityType {
        EntityType(name: name, primaryKey: PrimaryKey(name: "id", type: .integer), fields: fields)
    }

    /// Upgrades that the rules refuse, each with the words its refusal must hold.
    static let refused: [(String, DatasetSchema, String)] = [
        ("a reserved type name", v4 { $0.types.append(type("types")) }, "reserved"),
        ("a type named like an index", v4 { $0.types.append(type("books_author_code_index")) }, "index"),
        (
            "a type and a reference whose index is named like it",
            v4 {
                $0.types.append(
                    type("zz", fields: [Field(name: "loc", type: .integer, nullable: true, references: "zz")]))
                $0.types.append(type("zz_loc_index"))
            }, "index"
        ),
        ("too many types", v4 { $0.types += (0..<500).map { type("t\($0)") } }, "more than the 500"),
        (
            "too many fields",
            v4 {
                $0.types.append(
                    type("wide", fields: (0..<1001).map { Field(name: "f\($0)", type: .integer, nullable: true) }))
            },
            "more than the 1000"
        ),
        (
            "a long default",
            v4 {
                $0.types[1].fields.append(
                    Field(name: "notes", type: .text, default: .string(String(repeating: "x", count: 5000))))
            },
            "more than the 4096"
        ),
        (
            "a default holding NUL",
            v4 { $0.types[1].fields.append(Field(name: "notes", type: .text, default: "a\u{0}b")) }, "U+0000"
        ),
        ("a type changed", v4 { $0.types[1].fields[2].type = .text }, "books.price"),
        (
            "a version not raised",
            v4 {
                $0.schemaVersion = 3
                $0.types.append(type("shelves"))
            }, "schemaVersion 3"
        ),
    ]

    @Test(arguments: StoreBackend.tested) func aRefusedUpgradeOfEveryKindChangesNothing(backend: StoreBackend)
        async throws
    {
        try await backend.withStore { store in
            try await store.commit(Fixtures.catalogCreation())
            let before = try await StorageDump.of(store)
            for (kind, schema, words) in Self.refused {
                await #expect(Comment(rawValue: kind)) {
                    try await store.upgrade(to: schema, renaming: [])
                } throws: { error in
                    "\(error)".contains(words)
                }
                #expect(try await StorageDump.of(store) == before, "\(kind)")
            }
            // The store, and a store opened anew on the same database, serve as before.
            try await withSecondStore(of: store) { reopened async throws in
                #expect(try await reopened.schemaHistory().versions.map(\.number) == [3])
                #expect(try await reopened.schemaInfo().rowCounts == ["authors": 1, "books": 1])
            }
            #expect(try await store.commit(Fixtures.catalogCreation(author: "b", book: 2)) == 2)
        }
    }

    /// A `real` default that JSON writes as an integer (`0`), an integral `real` default and a
    /// `json` default of each kind are stored, read back and served as the field's type has them,
    /// by the store and by a store opened anew: the defect that made every server fail after one
    /// ordinary column.
    @Test(arguments: StoreBackend.tested) func defaultsReadBackAsTheirFieldsType(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            try await store.commit(Fixtures.catalogCreation())
            let fields = [
                Field(name: "weight", type: .real, default: .double(0)),
                Field(name: "height", type: .real, nullable: true, default: .double(2)),
                Field(name: "extra", type: .json, default: .object([:])),
                Field(name: "tags", type: .json, default: .array([])),
                Field(name: "blob", type: .blob, default: "AAEC"),
            ]
            let schema = Self.v4 { $0.types[1].fields += fields }
            try await backend.upgrade(
                store, to: schema,
                alterations: """
                    ALTER TABLE public.books ADD COLUMN weight double precision NOT NULL DEFAULT 0;
                    ALTER TABLE public.books ADD COLUMN height double precision DEFAULT 2;
                    ALTER TABLE public.books ADD COLUMN extra jsonb NOT NULL DEFAULT '{}';
                    ALTER TABLE public.books ADD COLUMN tags jsonb NOT NULL DEFAULT '[]';
                    ALTER TABLE public.books ADD COLUMN blob bytea NOT NULL DEFAULT '\\x000102'
                    """)
            try await withSecondStore(of: store) { reopened async throws in
                let info = try await reopened.schemaInfo(version: 4)
                #expect(info.types[1].fields.suffix(5) == fields[...])
                let page = try await reopened.snapshotPage(of: "books", after: nil, limit: 10, version: 4)
                #expect(Array(page.rows[0][6...10]) == [.double(0), .double(2), .object([:]), .array([]), "AAEC"])
            }
        }
    }

    /// A stored version that no server can read (written by hand, or by a server with a defect
    /// since fixed): the versions before it are served, it is named as unavailable, the server
    /// opens, and no upgrade builds on it.
    @Test(arguments: StoreBackend.tested) func anUnreadableStoredVersionIsUnavailableNotTheServer(
        backend: StoreBackend
    ) async throws {
        try await backend.withStore { store in
            try await store.commit(Fixtures.catalogCreation())
            let broken = #"{"dataset": "catalog", "schemaVersion": 4, "types": "not a list"}"#
            if let postgres = store as? PostgresSyncStore {
                try await TestPostgres.run(
                    "INSERT INTO seedsync._schemas VALUES (4, 1, '\(broken)', '[]')", on: postgres.location)
            } else {
                let queue = try DatabaseQueue(path: (store as! SQLiteSyncStore).path)
                try await queue.write { db in
                    try db.execute(
                        sql: "INSERT INTO _seedsync_schemas VALUES (4, 1, ?, '[]')", arguments: [broken])
                }
                try queue.close()
            }
            try await withSecondStore(of: store) { reopened async throws in
                #expect(try await reopened.schemaHistory().versions.map(\.number) == [3])
                #expect(try await reopened.schemaInfo(version: 3).rowCounts == ["authors": 1, "books": 1])
                #expect(
                    try await reopened.changeFeed(after: 0, limit: 10, byteBudget: 1 << 20, version: 3).changeSets.count
                        == 1)
                await #expect {
                    try await reopened.schemaInfo(version: 4)
                } throws: { error in
                    (error as? SyncStoreError)?.code == .unknownSchemaVersion
                        && "\(error)".contains("schema version 4 is stored but cannot be served")
                }
                #expect(try await reopened.commit(Fixtures.catalogCreation(author: "b", book: 2)) == 2)
                await #expect {
                    let v5 = Self.v4 {
                        $0.schemaVersion = 5
                        $0.types.append(Self.type("shelves"))
                    }
                    return try await reopened.upgrade(to: v5, renaming: [])
                } throws: { error in
                    (error as? SchemaUpgradeError)?.code == .invalidHistory
                        && "\(error)".contains("version 4 cannot be read")
                }
            }
        }
    }

}

/// Defaults reach SQL through one path (`TableSQL.literal`, SQLite's `ADD COLUMN … DEFAULT` takes no
/// bound value): hostile text round-trips exactly, and `--add-tables` cannot bring a reserved name.
@Suite struct UpgradeDefaultTests {
    static let hostile: [String] = [
        "it's", "'); DROP TABLE books; --", "\\", "\\'", "\"", "a''b", "😀 ünïcödé", "line\nbreak\ttab", "%s%n",
        String(repeating: "x", count: 4000),
    ]

    @Test func hostileTextDefaultsRoundTripOnTheEmbeddedStore() async throws {
        try await StoreBackend.sqlite.withStore { store in
            try await store.commit(Fixtures.catalogCreation())
            var schema = Fixtures.catalogSchema
            schema.schemaVersion = 4
            schema.types[1].fields += Self.hostile.enumerated().map { index, text in
                Field(name: "d\(index)", type: .text, default: .string(text))
            }
            try await store.upgrade(to: schema, renaming: [])
            let page = try await store.snapshotPage(of: "books", after: nil, limit: 10)
            #expect(Array(page.rows[0][6..<(6 + Self.hostile.count)]) == Self.hostile.map(JSONValue.string))
            #expect(
                try await store.schemaInfo(version: 4).types[1].fields.suffix(Self.hostile.count).map(\.default)
                    == Self.hostile.map { .string($0) })
        }
    }

    @Test(.needsPostgres, .tags(.postgres)) func aTableNamedLikeAChangeSetMemberIsNotAddedFromTheTables() async throws {
        try await StoreBackend.postgres.withStore { store in
            let postgres = try #require(store as? PostgresSyncStore)
            try await TestPostgres.runScript("CREATE TABLE public.types (id bigint PRIMARY KEY)", on: postgres.location)
            let before = try await StorageDump.of(store)
            await #expect {
                try await postgres.upgradeFromTables(adding: ["types"])
            } throws: { error in
                (error as? SchemaUpgradeError)?.code == .invalidSchema && "\(error)".contains("'types' is reserved")
            }
            #expect(try await StorageDump.of(store) == before)
        }
    }
}
