import Foundation
import PostgresNIO
import SeedSyncModel
import SeedSyncPostgres
import SeedSyncTesting
import Testing

/// A team's DDL on a served table: a rebuild, a lock, a dropped primary key. Each ends served or
/// refused with a message that says what to do, never a write confirmed that no client gets, never
/// a wait without bound, never a server that cannot start.
@Suite(.needsPostgres, .tags(.postgres)) struct TableDDLTests {
    static let show3: ChangeSet = ChangeSet(changes: [
        TypeChanges(
            type: "shows", create: [3],
            attributes: [
                "3": [
                    "title": "Matinee", "venue": "hall", "price": 8, "rating": .null, "sold_out": false,
                    "starts_at": "2026-02-01T14:00:00Z", "seats": .null,
                ]
            ])
    ])

    /// Qualified: the test role is called `seedsync`, like the bookkeeping's schema, which its
    /// search path puts first.
    static let rebuild = """
        CREATE TABLE public.shows_backup AS SELECT * FROM public.shows;
        DROP TABLE public.shows;
        CREATE TABLE public.shows (
          id integer PRIMARY KEY, title varchar(200) NOT NULL, venue varchar(20) REFERENCES public.venues (code),
          price numeric(8, 2) NOT NULL, rating real, sold_out boolean NOT NULL DEFAULT false,
          starts_at timestamptz NOT NULL, seats smallint
        );
        INSERT INTO public.shows SELECT * FROM public.shows_backup;
        DROP TABLE public.shows_backup
        """

    /// The usual rebuild under a running store: no write is confirmed to the new table, whose
    /// writes are not logged; pages answer `schema_mismatch` saying how to take it back; a store
    /// opened anew starts; `reattach` takes it back as one bulk revision.
    @Test func aRebuiltTableIsRefusedUntilReattached() async throws {
        try await withAttachedTeamTables { location, store in
            try await psql(Self.rebuild, on: location)
            let revision = try await store.revisions().revision
            await #expect {
                try await store.commit(Self.show3)
            } throws: {
                ($0 as? SyncStoreError)?.code == .schemaMismatch && "\($0)".contains("reattach --tables shows")
            }
            #expect(try await store.revisions().revision == revision, "no revision was taken")
            await #expect {
                try await store.snapshotPage(of: "shows", after: nil, limit: 10)
            } throws: {
                ($0 as? SyncStoreError)?.code == .schemaMismatch && "\($0)".contains("lost its capture triggers")
            }
            // Every other table is served and written.
            #expect(try await store.snapshotPage(of: "venues", after: nil, limit: 10).rows.count == 1)
            try await store.commit(
                ChangeSet(changes: [
                    TypeChanges(type: "venues", create: ["club"], attributes: ["club": ["name": "Club"]])
                ]))
            // A write the capture does not see, then a server that starts, then the way back.
            try await psql(
                "INSERT INTO public.shows VALUES (4, 'Unseen', 'hall', 1, NULL, false, '2026-03-01 10:00+00', NULL)",
                on: location)
            try await TestPostgres.withStore(at: location) { restarted async throws in
                #expect(try await restarted.snapshotPage(of: "venues", after: nil, limit: 10).rows.count == 2)
                let bulk = try await restarted.reattach(["shows"])
                #expect(bulk == revision + 2)
                let rows = try await Fixtures.contents(of: restarted)["shows"]
                #expect(rows?.map { $0[0] } == [1, 4] && rows?.allSatisfy { $0.last == .int(bulk) } == true)
                await #expect {
                    try await restarted.changeFeed(after: revision, limit: 10, byteBudget: 1 << 20)
                } throws: { ($0 as? SyncStoreError)?.code == .historyExpired }
            }
            let after = try await store.commit(Self.show3)
            let logged = try await changeSets(of: store, after: after - 1)
            #expect(logged.map(\.revision) == [after] && logged[0]["shows"]?.create == [3])
        }
    }

    /// A table locked by another session (every `ALTER TABLE` takes this lock): what needs it is
    /// answered 503 after the lock timeout, naming the table, and for a while at once; the other
    /// tables, the change log and the schema (without row counts) are served meanwhile.
    @Test func aLockedTableIsAnsweredUnavailableAndTheRestServed() async throws {
        try await withAttachedTeamTables { location, store in
            try await TestPostgres.withConnection(to: location) { locker, logger in
                try await locker.execute("BEGIN; LOCK TABLE shows IN ACCESS EXCLUSIVE MODE", logger: logger)
                // More requests for the locked table than the pool has connections.
                let outcomes = try await withThrowingTaskGroup(of: String.self) { group in
                    for _ in 0..<30 {
                        group.addTask {
                            do {
                                _ = try await store.snapshotPage(of: "shows", after: nil, limit: 10)
                                return "served"
                            } catch let error as SyncStoreError {
                                return "\(error.code) \(error.description.contains("public.shows is locked"))"
                            }
                        }
                    }
                    return try await group.reduce(into: [String]()) { $0.append($1) }
                }
                #expect(Set(outcomes) == ["store_unavailable true"])
                #expect(try await store.snapshotPage(of: "venues", after: nil, limit: 10).rows.count == 1)
                #expect(try await store.changeFeed(after: 1, limit: 10, byteBudget: 1 << 20).maxRevision == 1)
                let info = try await store.schemaInfo()
                #expect(info.revision == 1 && info.rowCounts == nil)
                await #expect {
                    try await store.commit(Self.show3)
                } throws: {
                    ($0 as? SyncStoreError)?.code == .storeUnavailable && "\($0)".contains("public.shows is locked")
                }
                try await locker.execute("ROLLBACK", logger: logger)
            }
            // Once the refusals' window is over, the table is served again.
            try await Task.sleep(for: LockedTables.window + .milliseconds(200))
            #expect(try await store.snapshotPage(of: "shows", after: nil, limit: 10).rows.count == 1)
            #expect(try await store.commit(Self.show3) == 2)
        }
    }

    /// A crowd of requests for a locked table does not take the connections the other tables
    /// need: once one has timed out on the lock, the rest are refused without a connection, so a
    /// page of another table gets one (four connections, ten seconds to get one: forty requests
    /// holding a connection three seconds each would keep it waiting thirty, and it would fail).
    /// The crowd comes after the first timeout: requests queued before it meet the mark only once
    /// they hold a connection, which on a loaded machine depends on the scheduler, not on the store.
    /// The test decides by outcomes, not by durations: on a loaded machine a task can wait seconds
    /// for a thread between two steps, which a store cannot help.
    @Test func aLockedTableDoesNotTakeTheConnectionsTheOthersNeed() async throws {
        try await withAttachedTeamTables { location, _ in
            try await PostgresSyncStore.withStore(at: location, maximumConnections: 4, leaseTimeout: .seconds(10)) {
                store in
                try await TestPostgres.withConnection(to: location) { locker, logger in
                    try await locker.execute("BEGIN; LOCK TABLE shows IN ACCESS EXCLUSIVE MODE", logger: logger)
                    await #expect(throws: SyncStoreError.self, "the first request waits for the lock, then fails") {
                        try await store.snapshotPage(of: "shows", after: nil, limit: 10)
                    }
                    let (refused, served) = try await withThrowingTaskGroup(of: (Bool, Int?).self) { group in
                        for _ in 0..<40 {
                            group.addTask {
                                do {
                                    _ = try await store.snapshotPage(of: "shows", after: nil, limit: 10)
                                    return (false, nil)
                                } catch {
                                    return ("\(error)".contains("public.shows is locked"), nil)
                                }
                            }
                        }
                        group.addTask {
                            (false, try await store.snapshotPage(of: "venues", after: nil, limit: 10).rows.count)
                        }
                        return try await group.reduce(into: (0, [Int]())) { result, outcome in
                            if outcome.0 { result.0 += 1 }
                            if let rows = outcome.1 { result.1.append(rows) }
                        }
                    }
                    #expect(refused == 40, "every request of the crowd refused, saying the table is locked")
                    #expect(served == [1], "the other table's page was served meanwhile")
                    try await locker.execute("ROLLBACK", logger: logger)
                }
            }
        }
    }

    /// A served table's primary key dropped: writes and pages are refused saying so, a store opens
    /// anew, and with the key back everything is served again.
    @Test func aDroppedPrimaryKeyIsRefusedUntilItIsBack() async throws {
        try await withAttachedTeamTables { location, store in
            try await psql("ALTER TABLE shows DROP CONSTRAINT shows_pkey", on: location)
            for attempt in [
                { try await store.commit(Self.show3) },
                { _ = try await store.snapshotPage(of: "shows", after: nil, limit: 10) },
                {
                    let update = ChangeSet(changes: [
                        TypeChanges(
                            type: "shows", update: [1],
                            attributes: [
                                "1": [
                                    "title": "Opening night", "venue": "hall", "price": 12.5, "rating": 0.1,
                                    "sold_out": false, "starts_at": "2026-01-01T19:00:00Z", "seats": 300,
                                    "revision": 1,
                                ]
                            ])
                    ])
                    let pushed = try await store.push(
                        PushedChangeSet(id: "p", changeSet: update), retention: .seconds(60))
                    Issue.record("pushed: \(pushed)")
                },
            ] as [@Sendable () async throws -> Void] {
                await #expect {
                    try await attempt()
                } throws: {
                    ($0 as? SyncStoreError)?.code == .schemaMismatch && "\($0)".contains("lost its primary key")
                }
            }
            try await TestPostgres.withStore(at: location) { restarted async throws in
                #expect(try await restarted.snapshotPage(of: "venues", after: nil, limit: 10).rows.count == 1)
            }
            try await psql("ALTER TABLE shows ADD PRIMARY KEY (id)", on: location)
            #expect(try await store.commit(Self.show3) == 2)
        }
    }
}

/// A push refused by a foreign key of the table itself: to a table the client cannot see, it is
/// rejected with the reason (the app is told why its edit went); to a served one, a conflict.
@Suite(.needsPostgres, .tags(.postgres)) struct ForeignKeyRefusalTests {
    static let tables = """
        CREATE TABLE owners (id integer PRIMARY KEY);
        CREATE TABLE pets (id bigint PRIMARY KEY, name text NOT NULL, owner_id integer REFERENCES owners (id));
        INSERT INTO owners VALUES (1);
        INSERT INTO pets VALUES (1, 'Rex', 1)
        """

    static let schema = DatasetSchema(
        dataset: "pets", schemaVersion: 1,
        types: [
            EntityType(
                name: "pets", primaryKey: PrimaryKey(name: "id", type: .integer),
                fields: [Field(name: "name", type: .text), Field(name: "owner_id", type: .integer, nullable: true)])
        ])

    @Test func aForeignKeyToAnUnservedTableRejectsThePushWithTheReason() async throws {
        try await withTeamDatabase(Self.tables) { location in
            try await PostgresSyncStore.attach(at: location, schema: Self.schema)
            try await TestPostgres.withStore(at: location) { store in
                let create = ChangeSet(changes: [
                    TypeChanges(type: "pets", create: [-1], attributes: ["-1": ["name": "Tom", "owner_id": 999]])
                ])
                let result = try await store.push(
                    PushedChangeSet(id: "tom", changeSet: create), retention: .seconds(60))
                guard case .rejected(let code, let message) = result.status else {
                    Issue.record("not rejected: \(result)")
                    return
                }
                #expect(code == "invalid_change_set" && message.contains("pets_owner_id_fkey"))
                #expect(try await store.revisions().revision == 1)
                let fine = ChangeSet(changes: [
                    TypeChanges(type: "pets", create: [-1], attributes: ["-1": ["name": "Tom", "owner_id": 1]])
                ])
                let applied = try await store.push(
                    PushedChangeSet(id: "tom-2", changeSet: fine), retention: .seconds(60))
                guard case .applied = applied.status else {
                    Issue.record("not applied: \(applied)")
                    return
                }
            }
        }
    }
}

/// A served column changed and changed back without an upgrade, with a write in between: the
/// rows logged meanwhile lack the field, every client behind them is answered 503, and
/// `repairLog()` gives them the values the table holds, so clients sync through without a new
/// snapshot.
@Suite(.needsPostgres, .tags(.postgres)) struct LogRepairTests {
    @Test(arguments: [
        (
            "renamed and back",
            "ALTER TABLE public.shows RENAME COLUMN title TO name; UPDATE public.shows SET seats = 250 WHERE id IN (1, 2); ALTER TABLE public.shows RENAME COLUMN name TO title"
        ),
        (
            "dropped and added again",
            "ALTER TABLE public.shows DROP COLUMN rating; UPDATE public.shows SET seats = 250 WHERE id IN (1, 2); ALTER TABLE public.shows ADD COLUMN rating real; UPDATE public.shows SET rating = 2 WHERE id = 1"
        ),
        (
            "retyped and back",
            "ALTER TABLE public.shows ALTER COLUMN seats TYPE text; UPDATE public.shows SET seats = '250' WHERE id IN (1, 2); ALTER TABLE public.shows ALTER COLUMN seats TYPE smallint USING seats::smallint"
        ),
    ])
    func aColumnChangedAndBackIsMendedAndClientsSyncThrough(change: String, alterations: String) async throws {
        try await withAttachedTeamTables { location, store in
            try await psql(
                "INSERT INTO public.shows VALUES (2, 'Late', 'hall', 5, NULL, false, '2026-01-02 22:00+00', 10)",
                on: location)
            try await psql(alterations, on: location)
            try await psql("DELETE FROM public.shows WHERE id = 2", on: location)
            await #expect(Comment(rawValue: change)) {
                try await changeSets(of: store, after: 1)
            } throws: {
                ($0 as? SyncStoreError)?.code == .schemaMismatch && "\($0)".contains("shows[1]")
            }
            let repair = try await store.repairLog()
            #expect(repair.rows == ["shows": 2], "\(change): shows 1 and 2, the second deleted since")
            let sets = try await changeSets(of: store, after: 1)
            let start: [String: [[JSONValue]]] = [
                "venues": [["hall", "Main Hall", "2001-02-03T04:05:06.5Z", "AQL/", 1]],
                "shows": [[1, "Opening", "hall", 12.5, 0.1, false, "2026-01-01T19:00:00Z", 300, 1]],
            ]
            #expect(
                replay(sets, onto: start, schema: teamSchema) == (try await Fixtures.contents(of: store)), "\(change)")
            #expect(try await store.repairLog().rows.isEmpty, "a second repair finds nothing")
        }
    }
}
