import Foundation
import GRDB
import SeedSyncModel
import SeedSyncSQL
import SeedSyncSQLiteStore
import SeedSyncStore
import SeedSyncTesting
import Testing

/// Each store reads a scoped reader's change feed through an index of its log by scope value
/// (SQLite: `_seedsync_change_scopes`; PostgreSQL: the `scope` and `from_scope` columns of its
/// log, `CaptureSQL.scopeIndexes`): over a history of edits, moves, creations, deletions and shared changes, every answer
/// holds every change set the whole log shows the grant up to its `maxRevision` and nothing else,
/// whatever the limit, budget and end; the index is rebuilt from the log when it is missing and
/// trimmed with it.
@Suite struct ScopeIndexTests {
    static let grants: [ScopeGrant] = [.only([1]), .only([2]), .only([3]), .only([1, 3]), .only([]), .only([9])]

    @Test func theIndexedFeedAnswersAsTheWholeLogDoes() async throws {
        try await withTemporaryDirectory { directory in
            let store = try await Fixtures.clubsStore(in: directory)
            try await Self.commitHistory(to: store)
            try await Self.expectFeedsMatchTheLog(store)

            let path = store.path
            try store.close()
            try DatabaseQueue(path: path).inDatabase { db in try db.execute(sql: "DROP TABLE _seedsync_change_scopes") }
            let reopened = try SQLiteSyncStore(path: path)
            try await Self.expectFeedsMatchTheLog(reopened)

            let compaction = try await reopened.compact(keepingRevisions: 10)
            try await Self.expectFeedsMatchTheLog(reopened)
            try reopened.close()
            let oldest = try DatabaseQueue(path: path).inDatabase { db in
                try Int64.fetchOne(db, sql: "SELECT min(revision) FROM _seedsync_change_scopes")
            }
            #expect(oldest.map { $0 > compaction.minRevision } == true, "compaction trims the index with the log")
        }
    }

    @Test func thePostgresFeedReadsItsScopeIndexesAsTheWholeLogDoes() async throws {
        try await StoreBackend.postgres.withStore(Fixtures.clubsSchema) { store in
            try await store.commit(Fixtures.clubsCreation(teams: 1...3, eventsPerTeam: 3))
            try await Self.commitHistory(to: store)
            try await Self.expectFeedsMatchTheLog(store)
            let compaction = try await store.compact(keepingRevisions: 10)
            try await Self.expectFeedsMatchTheLog(store)
            await #expect(throws: SyncStoreError.self) {
                try await store.changeFeed(
                    after: compaction.minRevision - 1, limit: 10, byteBudget: 1 << 20, version: nil, grant: .only([1]))
            }
        }
    }

    /// A type scoped by a text field that references nothing: the SQLite store indexes its rows
    /// by (scope field, key), so a team's page and count read its rows alone.
    @Test func aTeamsPageOnTheSQLiteStoreReadsItsRowsByTheScopeIndex() async throws {
        let schema = DatasetSchema(
            dataset: "orgs", schemaVersion: 1,
            types: [
                EntityType(
                    name: "notes", primaryKey: PrimaryKey(name: "id", type: .integer),
                    fields: [Field(name: "org", type: .text), Field(name: "body", type: .text)], scopedBy: "org")
            ],
            scope: ScopeDeclaration(name: "org", type: .text))
        try await withTemporaryDirectory { directory in
            let store = try await Fixtures.emptyStore(schema, in: directory)
            var notes = TypeChanges(type: "notes")
            for key in Int64(1)...2_000 {
                notes.create.append(.int(key))
                notes.attributes[String(key)] = ["org": .string("org \(key % 100)"), "body": "note"]
            }
            try await store.commit(ChangeSet(changes: [notes]))
            let table = TableSQL(type: schema.types[0])
            let plans = try await store.pool.read { db in
                let granted: DatabaseValue = "[\"org 7\"]".databaseValue
                let statements: [(String, StatementArguments)] = [
                    (table.snapshot(after: true, scoped: true), [1, granted, 11]),
                    (table.count(scoped: true), [granted]),
                ]
                return try statements.map { sql, arguments in
                    try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + sql, arguments: arguments)
                        .map { $0["detail"] as String }.joined(separator: "; ")
                }
            }
            for plan in plans {
                #expect(
                    plan.contains("USING INDEX _seedsync_scope_notes")
                        || plan.contains("USING COVERING INDEX _seedsync_scope_notes"), "\(plan)")
            }
            let page = try await store.snapshotPage(
                of: "notes", after: nil, limit: 100, grant: .only([.string("org 7")]))
            #expect(page.rows.map { $0[0] } == (0..<20).map { .int(7 + 100 * $0) })
        }
    }

    /// Every answer of the indexed feed, for every grant, start, limit, budget and end, against
    /// the change sets the whole log shows the grant (`scannedChangeFeed`, followed to the end).
    static func expectFeedsMatchTheLog(_ store: any SyncStore) async throws {
        let (head, minRevision) = try await store.revisions()
        for grant in grants {
            let all = try await follow(from: minRevision, grant: grant) { after in
                try await store.scannedChangeFeed(
                    after: after, limit: 1000, byteBudget: 1 << 20, version: nil, grant: grant, through: .max)
            }
            for after in minRevision...head {
                for (limit, budget, last) in [
                    (1000, 1 << 20, Int64.max), (1, 1 << 20, .max), (3, 300, .max), (1000, 1 << 20, after + 4),
                ] {
                    let feed = try await store.changeFeed(
                        after: after, limit: limit, byteBudget: budget, version: nil, grant: grant, through: last)
                    let expected = all.filter { $0.revision > after && $0.revision <= feed.maxRevision }
                    let what = "\(grant) after \(after), limit \(limit), budget \(budget), through \(last)"
                    #expect(feed.changeSets.map(\.revision) == expected.map(\.revision), "\(what)")
                    #expect(feed.changeSets.map(\.json) == expected.map(\.json), "\(what)")
                    #expect(feed.maxRevision <= min(last, head) && feed.maxRevision >= after, "\(what)")
                    #expect(feed.hasMore == (feed.maxRevision < head), "\(what)")
                    #expect(feed.changeSets.count <= limit && (feed.maxRevision > after || after == min(last, head)))
                }
            }
        }
    }

    static func follow(from revision: Int64, grant: ScopeGrant, _ read: (Int64) async throws -> ChangeFeed)
        async throws -> [EncodedChangeSet]
    {
        var all: [EncodedChangeSet] = []
        var after = revision
        while true {
            let feed = try await read(after)
            all += feed.changeSets
            after = feed.maxRevision
            if !feed.hasMore { return all }
        }
    }

    /// Sixty revisions: events retitled, moved between teams with their tickets, created and
    /// deleted, and the shared venue renamed, alone and together.
    static func commitHistory(to store: any SyncStore) async throws {
        var teamOf: [Int64: Int64] = [:]
        for team in Int64(1)...3 { for index in Int64(1)...3 { teamOf[team * 100 + index] = team } }
        let original = teamOf.keys.sorted()
        func event(_ key: Int64, _ title: String) -> TypeChanges {
            TypeChanges(
                type: "events", update: [.int(key)],
                attributes: [String(key): ["team_id": .int(teamOf[key]!), "title": .string(title), "venue_id": 1]])
        }
        let venue = TypeChanges(type: "venues", update: [1], attributes: ["1": ["name": "Hall"]])
        for step in Int64(0)..<60 {
            let key = original[Int(step) % original.count]
            var changes: [TypeChanges] = []
            switch step % 6 {
            case 0: changes = [event(key, "edit \(step)")]
            case 1:
                teamOf[key] = teamOf[key]! % 3 + 1
                changes = [
                    event(key, "moved \(step)"),
                    TypeChanges(
                        type: "tickets", update: [.int(key)],
                        attributes: [String(key): ["team_id": .int(teamOf[key]!), "event_id": .int(key)]]),
                ]
            case 2:
                changes = [
                    TypeChanges(type: "venues", update: [1], attributes: ["1": ["name": .string("Hall \(step)")]])
                ]
            case 3:
                let new = 1000 + step
                teamOf[new] = step % 3 + 1
                changes = [
                    TypeChanges(
                        type: "events", create: [.int(new)],
                        attributes: [String(new): ["team_id": .int(teamOf[new]!), "title": "new", "venue_id": 1]]),
                    TypeChanges(
                        type: "tickets", create: [.int(new)],
                        attributes: [String(new): ["team_id": .int(teamOf[new]!), "event_id": .int(new)]]),
                ]
            case 4:
                let old = 1000 + step - 1
                changes = [
                    TypeChanges(type: "tickets", delete: [.int(old)]), TypeChanges(type: "events", delete: [.int(old)]),
                ]
            default: changes = [event(key, "with the venue \(step)"), venue]
            }
            try await store.commit(ChangeSet(changes: changes))
        }
    }
}

/// Seeds registered per scope on the SQLite store: a store made before registrations had scope
/// values takes the column when opened, and keeps its seeds.
@Suite struct ScopedSeedRecordTests {
    @Test func aStoreMadeBeforeScopedSeedsTakesThemWhenOpened() async throws {
        try await withTemporaryDirectory { directory in
            let first = try await Fixtures.clubsStore(in: directory)
            let path = first.path
            _ = try await first.register(
                SeedRegistration(sha256: String(repeating: "a", count: 64), revision: 1, schemaVersion: 1))
            try first.close()
            let queue = try DatabaseQueue(path: path)
            try await queue.write { db in try db.execute(sql: "ALTER TABLE _seedsync_seeds DROP COLUMN scopes") }
            try queue.close()
            let store = try SQLiteSyncStore(path: path)
            let team = String(repeating: "b", count: 64)
            _ = try await store.register(SeedRegistration(sha256: team, revision: 1, schemaVersion: 1, scopes: [2]))
            #expect(try await store.registeredSeeds().map(\.scopes) == [nil, [2]])
            try store.close()
        }
    }
}
