import Foundation
import PostgresNIO
import SeedSyncBuild
import SeedSyncClient
import SeedSyncImport
import SeedSyncModel
import SeedSyncPostgres
import SeedSyncTesting
import Testing

/// The PostgreSQL DDL matrix: what teams run on a served table, under two live servers with apps
/// syncing and a client pushing, then undone. Each change ends served or refused with a clear
/// message, checked while it is in place:
///
/// - a push through one server is applied (and then reaches every app) or refused with a message,
///   never confirmed without reaching the log;
/// - the apps' syncs through both servers are served or refused with a message, the other table
///   served on;
/// - nothing waits without bound (each request has 30 s), and a restarted server starts.
///
/// After the undo and the documented way back (none, `seed-server schema repair-log`, or
/// `seed-server schema reattach`), both apps sync again and equal the tables, every confirmed
/// push in them. The counts are in docs/RELIABILITY.md.
@Suite(.needsPostgres, .tags(.postgres)) struct DDLMatrixTests {
    struct DDL: Sendable, CustomTestStringConvertible {
        var name: String
        /// The change, psql statements (autocommit); with `holdsLock`, the statements run in an
        /// open transaction of their own, held until the undo.
        var change: String
        var holdsLock = false
        /// Whether psql writes `items` while the change is in place.
        var writes = true
        /// What a push to `items` gets meanwhile: applied, or refused with these words.
        var push: String?
        /// What an app's sync gets meanwhile: served, or refused with these words.
        var sync: String?
        /// The undo, psql statements.
        var undo: String
        var wayBack: WayBack = .none

        enum WayBack: Sendable { case none, repairLog, reattach }

        var testDescription: String { name }
    }

    static let cases: [DDL] = [
        DDL(
            name: "add a column", change: "ALTER TABLE public.items ADD COLUMN extra text",
            undo: "ALTER TABLE public.items DROP COLUMN extra"),
        DDL(
            name: "drop a column", change: "ALTER TABLE public.items DROP COLUMN note",
            push: "does not exist", sync: "has no value for note",
            // The values went with the column: the team puts them back (logged like any write).
            undo:
                "ALTER TABLE public.items ADD COLUMN note text; UPDATE public.items SET note = 'n' || id WHERE id <> 2",
            wayBack: .repairLog),
        DDL(
            name: "rename a column", change: "ALTER TABLE public.items RENAME COLUMN note TO remark",
            push: "does not exist", sync: "has no value for note",
            undo: "ALTER TABLE public.items RENAME COLUMN remark TO note", wayBack: .repairLog),
        DDL(
            name: "retype a column", change: "ALTER TABLE public.items ALTER COLUMN qty TYPE text",
            push: "qty holds a string", sync: "items[2].qty holds a string",
            undo: "ALTER TABLE public.items ALTER COLUMN qty TYPE integer USING qty::integer", wayBack: .repairLog),
        DDL(
            name: "set not null", change: "ALTER TABLE public.items ALTER COLUMN qty SET NOT NULL",
            undo: "ALTER TABLE public.items ALTER COLUMN qty DROP NOT NULL"),
        DDL(
            name: "drop and re-create the table",
            change: """
                CREATE TABLE public.items_backup AS SELECT * FROM public.items;
                DROP TABLE public.items;
                CREATE TABLE public.items (id bigint PRIMARY KEY, name text NOT NULL, note text, qty integer);
                INSERT INTO public.items SELECT * FROM public.items_backup;
                DROP TABLE public.items_backup
                """,
            push: "lost its capture triggers", sync: nil, undo: "SELECT 1", wayBack: .reattach),
        DDL(
            name: "rename the table", change: "ALTER TABLE public.items RENAME TO goods", writes: false,
            push: "does not exist", sync: nil, undo: "ALTER TABLE public.goods RENAME TO items"),
        DDL(
            name: "drop the primary key", change: "ALTER TABLE public.items DROP CONSTRAINT items_pkey",
            push: "lost its primary key", sync: nil, undo: "ALTER TABLE public.items ADD PRIMARY KEY (id)"),
        DDL(name: "truncate", change: "TRUNCATE public.items", push: "conflict", undo: "SELECT 1"),
        DDL(
            name: "lock the table", change: "LOCK TABLE public.items IN ACCESS EXCLUSIVE MODE", holdsLock: true,
            writes: false, push: "public.items is locked", sync: nil, undo: "ROLLBACK"),
        DDL(
            name: "create an index concurrently", change: "CREATE INDEX CONCURRENTLY items_name ON public.items (name)",
            undo: "DROP INDEX CONCURRENTLY public.items_name"),
    ]

    static let tables = """
        CREATE TABLE items (id bigint PRIMARY KEY, name text NOT NULL, note text, qty integer);
        CREATE TABLE tags (id bigint PRIMARY KEY, label text NOT NULL);
        INSERT INTO items VALUES (1, 'one', 'n1', 1), (2, 'two', NULL, 2), (3, 'three', 'n3', 3);
        INSERT INTO tags VALUES (1, 'red')
        """

    static let schema = DatasetSchema(
        dataset: "items", schemaVersion: 1,
        types: [
            EntityType(
                name: "items", primaryKey: PrimaryKey(name: "id", type: .integer),
                fields: [
                    Field(name: "name", type: .text), Field(name: "note", type: .text, nullable: true),
                    Field(name: "qty", type: .integer, nullable: true),
                ]),
            EntityType(
                name: "tags", primaryKey: PrimaryKey(name: "id", type: .integer),
                fields: [Field(name: "label", type: .text)]),
        ])

    static let gate = TestGate(width: 3)

    @Test(arguments: cases)
    func aChangeUnderLiveServersIsServedOrRefusedAndUndone(_ ddl: DDL) async throws {
        try await Self.gate.run { try await check(ddl) }
    }

    private func check(_ ddl: DDL) async throws {
        try await withAppsOnTwoServers(
            Self.tables, Self.schema, before: "UPDATE public.items SET qty = 20 WHERE id = 2"
        ) {
            location, a, b, urlB, apps in
            let confirmed = try await Self.changed(ddl, location: location) {
                if ddl.writes {
                    try await psql("UPDATE public.items SET name = name || '+' WHERE id = 2", on: location)
                }
                let confirmed = try await during(ddl, urlB: urlB, apps: apps, store: b)
                try await Self.bounded("a restarted server") {
                    try await TestPostgres.withStore(at: location) { restarted in
                        _ = try await restarted.snapshotPage(of: "tags", after: nil, limit: 10)
                    }
                }
                return confirmed
            }
            switch ddl.wayBack {
            case .none: break
            case .repairLog: _ = try await a.repairLog()
            case .reattach: _ = try await a.reattach(["items"])
            }
            // Both apps sync again, equal to the tables, every confirmed push in them.
            _ = try await apps.old.run()
            _ = try await apps.new.run()
            let tables = try await Fixtures.contents(of: a)
            #expect(try contents(ofSeed: apps.oldDatabase) == tables, "\(ddl.name): the old app")
            #expect(try contents(ofSeed: apps.newDatabase) == tables, "\(ddl.name): the new app")
            let names = Set((tables["items"] ?? []).map { $0[1] })
            if let confirmed {
                #expect(names.contains(.string(confirmed)), "\(ddl.name): the confirmed push \(confirmed)")
            }
        }
    }

    /// While the change is in place: a push through server B and both apps' syncs (one through
    /// each server) end as `ddl` says; the other table is served.
    ///
    /// - Returns: the name the push wrote when it was confirmed.
    private func during(_ ddl: DDL, urlB: URL, apps: ColumnMatrixTests.Apps, store: PostgresSyncStore) async throws
        -> String?
    {
        let pushed = try await Self.bounded("a push") { try await Self.push(through: urlB, store: store) }
        switch (ddl.push, pushed) {
        case (nil, .success(let name)):
            return name
        case (let words?, .failure(let error)):
            #expect("\(error)".contains(words), "\(ddl.name): the push: \(error)")
        case (nil, .failure(let error)):
            Issue.record("\(ddl.name): the push was refused: \(error)")
        case (_?, .success):
            Issue.record("\(ddl.name): the push was applied")
        }
        for app in [apps.old, apps.new] {
            let synced = try await Self.bounded("a sync") { () -> Result<ImportReport, any Error> in
                do { return .success(try await app.run()) } catch { return .failure(error) }
            }
            switch (ddl.sync, synced) {
            case (nil, .success),
                (_, .failure) where ddl.sync.map({ "\(synced)".contains($0) }) == true:
                break
            default:
                Issue.record("\(ddl.name): a sync ended \(synced), expected \(ddl.sync ?? "served")")
            }
        }
        #expect(try await store.snapshotPage(of: "tags", after: nil, limit: 10).rows.count == 1)
        return nil
    }

    /// Pushes an update of `items[1]` through the server at `url`, as a client that read it.
    ///
    /// - Returns: the name written when the push was applied, else the refusal.
    private static func push(through url: URL, store: PostgresSyncStore) async throws -> Result<String, any Error> {
        let client = SyncClient(
            configuration: .init(serverURL: url, token: liveServerWriteToken, requestTimeout: 10, retry: .none))
        let name = "pushed-\(UUID().uuidString.prefix(6))"
        do {
            let base = try await store.revisions().revision
            // The revision the client read the row at, as its database keeps it.
            let revision = try await TestPostgres.withConnection(to: store.location) { connection, logger in
                var found: Int64 = base
                let rows = try await connection.query(
                    #"SELECT revision FROM seedsync."_rows_items" WHERE key = 1"#, logger: logger)
                for try await value in rows.decode(Int64.self) { found = value }
                return found
            }
            let update = ChangeSet(changes: [
                TypeChanges(
                    type: "items", update: [1],
                    attributes: ["1": ["name": .string(name), "note": "n1", "qty": 1, "revision": .int(revision)]])
            ])
            let answer = try await client.sync(from: base, pushing: [PushedChangeSet(id: name, changeSet: update)])
            guard case .applied = answer.results.first?.status else {
                return .failure(TestSetupError("not applied: \(answer.results)"))
            }
            return .success(name)
        } catch {
            return .failure(error)
        }
    }

    /// Runs `body` with `ddl`'s change in place, then undoes it; a held lock stays held on a
    /// connection of its own until the undo.
    private static func changed<T: Sendable>(
        _ ddl: DDL, location: PostgresLocation, _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        guard ddl.holdsLock else {
            try await psql(ddl.change, on: location)
            let result = try await body()
            try await psql(ddl.undo, on: location)
            return result
        }
        return try await TestPostgres.withConnection(to: location) { locker, logger in
            try await locker.execute("BEGIN; \(ddl.change)", logger: logger)
            let result = try await body()
            try await locker.execute(ddl.undo, logger: logger)
            return result
        }
    }

    /// `body`'s result, or a recorded issue and an error when it takes over 30 s: nothing may
    /// wait without bound.
    private static func bounded<T: Sendable>(_ what: String, _ body: @escaping @Sendable () async throws -> T)
        async throws -> T
    {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await body() }
            group.addTask {
                try await Task.sleep(for: .seconds(30))
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let result = first else {
                Issue.record("\(what) waited over 30 s")
                throw TestSetupError("\(what) waited over 30 s")
            }
            return result
        }
    }
}
