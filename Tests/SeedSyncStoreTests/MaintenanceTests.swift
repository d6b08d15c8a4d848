import Foundation
import GRDB
import SeedSyncDemo
import SeedSyncModel
import SeedSyncSQLiteStore
import SeedSyncStore
import SeedSyncTesting
import Testing

private struct Interrupted: Error {}

@Suite struct MaintenanceTests {
    /// An acknowledged revision survives a power loss (RELIABILITY.md): the store's writer syncs
    /// each commit (`synchronous = FULL`, 2), where GRDB's WAL setup leaves NORMAL (1).
    @Test func theSQLiteStoresWriterSyncsEveryCommit() async throws {
        try await withTemporaryDirectory { directory in
            let store = try await Fixtures.emptyStore(Fixtures.catalogSchema, in: directory)
            let level = try await store.pool.writeWithoutTransaction { db in
                try Int.fetchOne(db, sql: "PRAGMA synchronous")
            }
            #expect(level == 2)
            try store.close()
        }
    }

    @Test func createRefusesToOverwriteAndOpenRefusesMissingOrForeignFiles() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("server.sqlite").path
            try await SQLiteSyncStore.create(at: path, schema: Fixtures.catalogSchema)
            await #expect { try await SQLiteSyncStore.create(at: path, schema: Fixtures.catalogSchema) } throws: {
                ($0 as? StoreError)?.code == .alreadyExists
            }
            #expect { try SQLiteSyncStore(path: directory.appendingPathComponent("missing.sqlite").path) } throws: {
                ($0 as? StoreError)?.code == .missingDatabase
            }
            let foreign = directory.appendingPathComponent("foreign.sqlite").path
            _ = FileManager.default.createFile(atPath: foreign, contents: Data("not a database at all, just text".utf8))
            #expect { try SQLiteSyncStore(path: foreign) } throws: { ($0 as? StoreError)?.code == .notAServerDatabase }
        }
    }

    @Test func aFailedCreateLeavesNothingBehind() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("server.sqlite").path
            await #expect(throws: Interrupted.self) {
                try await SQLiteSyncStore.create(at: path, schema: DemoDataset.schema) { store in
                    _ = try await store.bulkLoad(DemoDataset(events: 10, locations: 5, seed: 1).loads)
                    throw Interrupted()
                }
            }
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            #expect(leftovers == [])
        }
    }

    @Test(arguments: StoreBackend.tested) func bulkLoadIsOneRevisionThatMovesMinRevision(backend: StoreBackend)
        async throws
    {
        try await backend.withStore { store in
            try await store.commit(Fixtures.catalogCreation())
            let lines = (2...1_001).map {
                #"{"id": \#($0), "title": "Book \#($0)", "price": \#($0).5, "in_stock": true, "author_code": "le-guin"}"#
            }
            let file = try TemporaryFile(named: "books.ndjson", contents: lines.joined(separator: "\n") + "\n\n")
            let result = try await store.load(ndjsonFile: file.path, into: "books")
            #expect(result.rows == 1_000)
            #expect(result.revision == 2)
            let info = try await store.schemaInfo()
            #expect(info.revision == 2)
            #expect(info.minRevision == 2)
            #expect(try await store.schemaInfo().rowCounts?["books"] == 1_001)
            await #expect { try await store.changeFeed(after: 1, limit: 10, byteBudget: 1 << 20) } throws: {
                ($0 as? SyncStoreError)?.code == .historyExpired
            }
        }
    }

    /// Values a bulk load writes (through COPY on PostgreSQL) come back as they went in: escapes,
    /// tabs and newlines in text and keys, blobs, timestamps, nulls, reals given as integers.
    @Test(arguments: StoreBackend.tested) func bulkLoadsKeepEveryValue(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let authors = try TemporaryFile(
                named: "authors.ndjson",
                contents: [
                    #"{"code": "tab\tkey", "name": "back\\slash \"quoted\"\nnew line\r", "born": "1929-10-21T00:00:00Z", "photo": "AAEC/w=="}"#,
                    #"{"code": "plain", "name": "\\N", "born": null, "photo": null}"#,
                ].joined(separator: "\n"))
            let books = try TemporaryFile(
                named: "books.ndjson",
                contents:
                    #"{"id": 7, "title": "中文", "price": 3, "in_stock": false, "pages": -1, "author_code": "tab\tkey"}"#)
            _ = try await store.load(ndjsonFile: authors.path, into: "authors")
            _ = try await store.load(ndjsonFile: books.path, into: "books")
            let contents = try await Fixtures.contents(of: store)
            #expect(
                contents["authors"] == [
                    ["plain", "\\N", .null, .null, 1],
                    ["tab\tkey", "back\\slash \"quoted\"\nnew line\r", "1929-10-21T00:00:00Z", "AAEC/w==", 1],
                ])
            #expect(contents["books"] == [[7, "中文", "tab\tkey", 3.0, false, -1, 2]])
        }
    }

    @Test(arguments: [
        (
            #"{"id": 5, "title": "T", "price": 1, "in_stock": true}\#n{"id": 6, "title": 7, "price": 1, "in_stock": true}"#,
            "books.ndjson:2: books[6].title: expected a string"
        ),
        (#"{"id": 5, "title": "T", "price": 1, "in_stock": true}\#n{"id": 6,"#, "books.ndjson:2: not a JSON object"),
        (
            #"{"id": 5, "title": "T", "price": 1, "in_stock": true, "author_code": "ghost"}"#,
            "books[5].author_code references authors[ghost], which does not exist"
        ),
        (#"{"title": "T", "price": 1, "in_stock": true}"#, "has no 'id'"),
        (
            #"{"id": 5, "title": "T", "price": 1, "in_stock": true}\#n{"id": 4611686018427387904, "title": "T", "price": 1, "in_stock": true}"#,
            "books[4611686018427387904] cannot be created: integer keys end at 4611686018427387903"
        ),
        (
            #"{"id": 5, "title": "T", "price": 1, "in_stock": true}\#n{"id": -1, "title": "T", "price": 1, "in_stock": true}"#,
            "books[-1] cannot be created: integer keys of stored rows are 0 or more"
        ),
    ])
    func badLoadsWriteNothing(content: String, message: String) async throws {
        for backend in StoreBackend.tested {
            try await expectBadLoad(content: content, message: message, backend: backend)
        }
    }

    private func expectBadLoad(content: String, message: String, backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let file = try TemporaryFile(named: "books.ndjson", contents: content)
            await #expect { try await store.load(ndjsonFile: file.path, into: "books") } throws: {
                "\($0)".contains(message)
            }
            #expect(try await store.schemaInfo().rowCounts?["books"] == 0)
            #expect(try await store.schemaInfo().revision == 0)
        }
    }

    @Test(arguments: StoreBackend.tested) func compactionKeepsTheNewestRevisions(backend: StoreBackend) async throws {
        try await backend.withDemoStore { store in
            try await ChangeGenerator.mutate(store, changes: 20, seed: 9)
            // Read once before: a store that keeps what it read must still refuse what compaction dropped.
            let before = try await store.changeFeed(after: 1, limit: 100, byteBudget: 1 << 20)
            #expect(before.changeSets.map(\.revision) == Array(2...21))
            #expect(
                try await store.changeFeed(after: 1, limit: 100, byteBudget: 1 << 20).changeSets == before.changeSets)
            let compaction = try await store.compact(keepingRevisions: 5)
            #expect(compaction.minRevision == 16)
            #expect(compaction.removedChangeSets == 15)
            #expect(try await store.schemaInfo().minRevision == 16)
            #expect(
                try await store.changeFeed(after: 16, limit: 100, byteBudget: 1 << 20).changeSets.map(\.revision)
                    == Array(17...21))
            await #expect { try await store.changeFeed(after: 15, limit: 100, byteBudget: 1 << 20) } throws: {
                ($0 as? SyncStoreError)?.minRevision == 16
            }
            #expect(try await store.compact(keepingRevisions: 50).minRevision == 16)
        }
    }
}

@Suite struct NDJSONRowReaderTests {
    @Test func refusesLinesOverTheLimitWhereverTheyFall() async throws {
        try await withTemporaryDirectory { directory in
            let books = try #require(Fixtures.catalogSchema.type(named: "books"))
            let short = #"{"id": 1, "title": "T", "price": 1, "in_stock": true}"#
            let long = #"{"id": 2, "title": "\#(String(repeating: "x", count: 200))", "price": 1, "in_stock": true}"#
            for (name, content) in [("middle", "\(short)\n\(long)\n\(short)\n"), ("last", "\(short)\n\(long)")] {
                let file = directory.appendingPathComponent("\(name).ndjson")
                try content.write(to: file, atomically: true, encoding: .utf8)
                var rows = try NDJSONRowReader(path: file.path, type: books, maxLineLength: 100)
                #expect(try rows.nextRow()?.key == 1)
                #expect { try rows.nextRow() } throws: {
                    "\($0)".contains("\(name).ndjson:2: line longer than 100 bytes")
                }
            }
            var generous = try NDJSONRowReader(
                path: directory.appendingPathComponent("middle.ndjson").path, type: books)
            var count = 0
            while try generous.nextRow() != nil { count += 1 }
            #expect(count == 3)
        }
    }
}
