import Foundation
import SeedSyncModel
import SeedSyncPostgres
import SeedSyncSQLiteStore
import SeedSyncStore
import SeedSyncTesting
import Testing

/// A dataset split by team (`Fixtures.clubsSchema`): what a reader of some teams reads, and what
/// a writer of some teams may write, on every store. Teams 1-3 hold events 101-103, 201-203,
/// 301-303 and a ticket of the same key each; venue 1 is shared.
@Suite struct ScopeTests {
    static let day = Duration.seconds(86_400)
    static let teamOne = ScopeGrant.only([.int(1)])

    /// Runs `body` with a clubs store of `backend` at revision 1.
    func withClubs(
        _ backend: StoreBackend, _ body: @escaping @Sendable (any MaintainedSyncStore) async throws -> Void
    ) async throws {
        try await backend.withStore(Fixtures.clubsSchema) { store in
            try await store.commit(Fixtures.clubsCreation(teams: 1...3, eventsPerTeam: 3))
            try await body(store)
        }
    }

    /// Every key of `type` a snapshot shows `grant`, through pages of two rows.
    func keys(of type: String, _ store: some SyncStore, _ grant: ScopeGrant) async throws -> [JSONValue] {
        var keys: [JSONValue] = []
        var after: JSONValue?
        repeat {
            let page = try await store.snapshotPage(of: type, after: after, limit: 2, grant: grant)
            keys += page.rows.map { $0[0] }
            after = page.next == .null ? nil : page.next
        } while after != nil
        return keys
    }

    /// The change sets `grant` reads after `revision`, parsed, with the feed's end.
    func feed(after revision: Int64, _ store: some SyncStore, _ grant: ScopeGrant) async throws
        -> (changeSets: [ChangeSet], maxRevision: Int64)
    {
        let feed = try await store.changeFeed(
            after: revision, limit: 1000, byteBudget: 1 << 20, version: nil, grant: grant)
        return (try feed.changeSets.map { try ChangeSet(json: JSONParser.parse($0.json)) }, feed.maxRevision)
    }

    @Test(arguments: StoreBackend.tested) func aReaderOfOneTeamSeesItsRowsAndTheSharedOnesAndCountsNothingElse(
        backend: StoreBackend
    ) async throws {
        try await withClubs(backend) { store in
            let info = try await store.schemaInfo(version: nil, grant: Self.teamOne)
            #expect(info.rowCounts == ["teams": 1, "venues": 1, "events": 3, "tickets": 3])
            #expect(info.scope == ScopeDeclaration(name: "team", type: .integer))
            #expect(try await store.schemaInfo().rowCounts == ["teams": 3, "venues": 1, "events": 9, "tickets": 9])
            #expect(try await keys(of: "events", store, Self.teamOne) == [101, 102, 103])
            #expect(try await keys(of: "teams", store, .only([.string("3"), .int(2)])) == [2, 3])
            #expect(try await keys(of: "venues", store, .only([])) == [1], "shared rows reach every reader")
            #expect(try await keys(of: "tickets", store, .only([])) == [])
            #expect(try await keys(of: "events", store, .all).count == 9)
        }
    }

    @Test(arguments: StoreBackend.tested) func aRowMovingBetweenTeamsIsADeleteForTheOldTeamAndACreateForTheNew(
        backend: StoreBackend
    ) async throws {
        try await withClubs(backend) { store in
            let start = try await store.revisions().revision
            // Revision 2 moves event 201 (and its ticket) to team 1; 3 changes team 2 alone; 4
            // moves event 102 to team 3; 5 deletes ticket 103 and renames team 1.
            try await store.commit(
                ChangeSet(changes: [
                    TypeChanges(
                        type: "events", update: [201],
                        attributes: ["201": ["team_id": 1, "title": "moved in", "venue_id": 1]]),
                    TypeChanges(type: "tickets", update: [201], attributes: ["201": ["team_id": 1, "event_id": 201]]),
                ]))
            try await store.commit(
                ChangeSet(changes: [
                    TypeChanges(
                        type: "events", update: [202],
                        attributes: ["202": ["team_id": 2, "title": "team 2 news", "venue_id": .null]])
                ]))
            try await store.commit(
                ChangeSet(changes: [
                    TypeChanges(type: "tickets", delete: [102]),
                    TypeChanges(
                        type: "events", update: [102],
                        attributes: ["102": ["team_id": 3, "title": "moved out", "venue_id": 1]]),
                ]))
            try await store.commit(
                ChangeSet(changes: [
                    TypeChanges(type: "teams", update: [1], attributes: ["1": ["name": "The Ones"]]),
                    TypeChanges(type: "tickets", delete: [103]),
                ]))
            let (seen, end) = try await feed(after: start, store, Self.teamOne)
            #expect(end == start + 4, "the feed moves past the revision it was not shown")
            #expect(seen.map(\.revision) == [start + 1, start + 3, start + 4])
            #expect(seen[0]["events"]?.create == [201] && seen[0]["events"]?.update == [])
            #expect(seen[0]["events"]?.attributes["201"]?["title"] == "moved in")
            #expect(seen[1]["events"]?.delete == [102] && seen[1]["tickets"]?.delete == [102])
            #expect(seen[1]["events"]?.attributes.isEmpty == true, "a row that left shows no attributes")
            #expect(seen[2]["teams"]?.update == [1] && seen[2]["tickets"]?.delete == [103])
            #expect(seen.allSatisfy { $0.changes.allSatisfy(\.from.isEmpty) }, "`from` is for global readers")
            let (teamTwo, _) = try await feed(after: start, store, .only([.int(2)]))
            #expect(teamTwo.map(\.revision) == [start + 1, start + 2])
            #expect(teamTwo[0]["events"]?.delete == [201] && teamTwo[0]["tickets"]?.delete == [201])
            let (teamThree, _) = try await feed(after: start, store, .only([.int(3)]))
            #expect(teamThree.map(\.revision) == [start + 3] && teamThree[0]["events"]?.create == [102])
            // A global reader gets every change set, with where the moved and deleted rows were.
            let (global, _) = try await feed(after: start, store, .all)
            #expect(global.count == 4 && global[0]["events"]?.from == ["201": 2])
            #expect(global[2]["tickets"]?.from == ["102": 1] && global[2]["events"]?.from == ["102": 1])
            #expect(global[1]["events"]?.from == [:], "an update inside one team names no `from`")
        }
    }

    @Test(arguments: StoreBackend.tested) func aLongStretchOfOtherTeamsChangesEndsInAnAnswerThatOnlyMovesTheReaderOn(
        backend: StoreBackend
    ) async throws {
        try await withClubs(backend) { store in
            let start = try await store.revisions().revision
            for index in 0..<3 {
                try await store.commit(
                    ChangeSet(changes: [
                        TypeChanges(
                            type: "events", update: [301],
                            attributes: ["301": ["team_id": 3, "title": .string("edit \(index)"), "venue_id": 1]])
                    ]))
            }
            let feed = try await store.changeFeed(
                after: start, limit: 1, byteBudget: 1 << 20, version: nil, grant: Self.teamOne)
            #expect(feed.changeSets.isEmpty && feed.maxRevision == start + 3 && !feed.hasMore)
            let global = try await store.changeFeed(
                after: start, limit: 1, byteBudget: 1 << 20, version: nil, grant: .all)
            #expect(global.changeSets.count == 1 && global.hasMore)
            let bounded = try await store.changeFeed(
                after: start, limit: 10, byteBudget: 1 << 20, version: nil, grant: Self.teamOne, through: start + 2)
            #expect(bounded.maxRevision == start + 2 && bounded.hasMore)
        }
    }

    @Test(arguments: StoreBackend.tested) func aWriterOfOneTeamWritesItsRowsAndCannotTellOtherTeamsRowsFromMissingOnes(
        backend: StoreBackend
    ) async throws {
        try await withClubs(backend) { store in
            let revision = try await store.revisions().revision
            func push(_ id: String, _ types: String) async throws -> PushResult.Status {
                let json = #"{"id": "\#(id)", \#(types)}"#
                return try await store.push(
                    PushedChangeSet(json: JSONParser.parse(Array(json.utf8))), retention: Self.day, version: nil,
                    grant: Self.teamOne
                ).status
            }
            let own = try await push(
                "own",
                #""types": ["events"], "events": {"create": [-1], "update": [101], "attributes": {"-1": {"team_id": 1, "title": "new", "venue_id": 1}, "101": {"team_id": 1, "title": "edited", "venue_id": null, "revision": \#(revision)}}}"#
            )
            guard case .applied = own else { throw TestFailure("a push inside the team was not applied: \(own)") }
            let other = try await push(
                "other",
                #""types": ["events"], "events": {"create": [-1], "attributes": {"-1": {"team_id": 2, "title": "x", "venue_id": 1}}}"#
            )
            guard case .rejected(let code, let message) = other else { throw TestFailure("not rejected: \(other)") }
            #expect(code == "invalid_change_set" && message.contains("team 2") && message.contains("does not grant"))
            let moving = try await push(
                "moving",
                #""types": ["events"], "events": {"update": [102], "attributes": {"102": {"team_id": 2, "title": "x", "venue_id": 1, "revision": \#(revision)}}}"#
            )
            guard case .rejected = moving else {
                throw TestFailure("a move out of the grant was not rejected: \(moving)")
            }
            // A row of team 2, updated or deleted with its true revision, answers as a missing row.
            for (id, types) in [
                (
                    "update-2",
                    #""types": ["events"], "events": {"update": [201], "attributes": {"201": {"team_id": 1, "title": "mine", "venue_id": 1, "revision": \#(revision)}}}"#
                ),
                (
                    "delete-2",
                    #""types": ["tickets"], "tickets": {"delete": [201], "attributes": {"201": {"revision": \#(revision)}}}"#
                ),
                (
                    "delete-missing",
                    #""types": ["tickets"], "tickets": {"delete": [999], "attributes": {"999": {"revision": \#(revision)}}}"#
                ),
            ] {
                let status = try await push(id, types)
                guard case .conflict(let rows) = status else { throw TestFailure("\(id) did not conflict: \(status)") }
                let shown = rows.changes.flatMap { $0.create + $0.update }
                #expect(shown.isEmpty, "\(id): the answer shows no row of another team")
            }
            // A ticket of team 1 pointing at team 2's event: a reference to a row the writer cannot have.
            let reference = try await push(
                "reference",
                #""types": ["tickets"], "tickets": {"create": [-1], "attributes": {"-1": {"team_id": 1, "event_id": 201}}}"#
            )
            guard case .conflict(let rows) = reference else {
                throw TestFailure("a reference across teams did not read as one to a missing row: \(reference)")
            }
            #expect(rows["events"]?.delete == [201], "the target shows gone, as a missing one would")
            #expect(rows.changes.flatMap { $0.create + $0.update }.isEmpty, "no row of team 2 is shown")
            #expect(try await keys(of: "events", store, .only([.int(2)])) == [201, 202, 203], "team 2 is untouched")
        }
    }

    @Test(arguments: StoreBackend.tested) func aPushIdAnotherTeamUsedNeverAnswersWithThatTeamsResult(
        backend: StoreBackend
    ) async throws {
        try await withClubs(backend) { store in
            let revision = try await store.revisions().revision
            let json =
                #"{"id": "same-id", "types": ["events"], "events": {"create": [-1], "attributes": {"-1": {"team_id": 2, "title": "secret", "venue_id": 1}}}}"#
            let pushed = try PushedChangeSet(json: JSONParser.parse(Array(json.utf8)))
            let first = try await store.push(pushed, retention: Self.day, version: nil, grant: .only([.int(2)]))
            guard case .applied = first.status else { throw TestFailure("not applied: \(first)") }
            let other = try await store.push(pushed, retention: Self.day, version: nil, grant: Self.teamOne)
            guard case .rejected(_, let message) = other.status else { throw TestFailure("answered: \(other)") }
            #expect(message.contains("used by a writer of other scope values") && !message.contains("secret"))
            let again = try await store.push(
                pushed, retention: Self.day, version: nil, grant: .only([.int(2), .int(1)]))
            #expect(again == first, "a writer granted at least the first one's values gets the first result")
            #expect(try await store.revisions().revision == revision + 1, "applied once")
        }
    }

    @Test(arguments: StoreBackend.tested) func anAdminCommitRefusesAReferenceAcrossTeams(backend: StoreBackend)
        async throws
    {
        try await withClubs(backend) { store in
            let error = await #expect(throws: SyncStoreError.self) {
                try await store.commit(
                    ChangeSet(changes: [
                        TypeChanges(
                            type: "tickets", create: [900], attributes: ["900": ["team_id": 1, "event_id": 201]])
                    ]))
            }
            #expect(error?.description.contains("another scope value") == true, "\(String(describing: error))")
            // An event that moves leaves its ticket referencing it from the old team.
            let left = await #expect(throws: SyncStoreError.self) {
                try await store.commit(
                    ChangeSet(changes: [
                        TypeChanges(
                            type: "events", update: [102],
                            attributes: ["102": ["team_id": 3, "title": "moved alone", "venue_id": 1]])
                    ]))
            }
            #expect(left?.description.contains("tickets[102].event_id references events[102]") == true)
        }
    }

    @Test(arguments: StoreBackend.tested) func aScopeCannotChangeBetweenVersions(backend: StoreBackend) async throws {
        try await withClubs(backend) { store in
            var unscoped = Fixtures.clubsSchema
            unscoped.schemaVersion = 2
            unscoped.types[0].scopedBy = nil
            unscoped.types[3].fields.append(Field(name: "note", type: .text, nullable: true))
            let error = await #expect(throws: SchemaUpgradeError.self) {
                try await store.upgrade(to: unscoped, renaming: [])
            }
            #expect(error?.code == .scopeChanged)
            var added = Fixtures.clubsSchema
            added.schemaVersion = 2
            added.types[3].fields.append(Field(name: "note", type: .text, nullable: true))
            _ = try await backend.upgrade(store, to: added, alterations: "ALTER TABLE tickets ADD COLUMN note text")
            #expect(try await store.schemaInfo(version: 2, grant: Self.teamOne).rowCounts?["tickets"] == 3)
        }
    }

    /// A team's existing tables with a tenant column (`integer`, as teams have them), attached: their
    /// rows become the bulk revision, a reader of one team reads that team's rows, and psql writes
    /// after are logged with the team each row left.
    @Test func existingTablesWithATenantColumnAreServedAttached() async throws {
        try await TestPostgres.withDatabase { location in
            try await TestPostgres.runScript(
                """
                CREATE TABLE public.teams (id integer PRIMARY KEY, name text NOT NULL);
                CREATE TABLE public.venues (id integer PRIMARY KEY, name text NOT NULL);
                CREATE TABLE public.events (id bigint PRIMARY KEY, team_id integer NOT NULL REFERENCES public.teams,
                  title text NOT NULL, venue_id integer REFERENCES public.venues);
                CREATE TABLE public.tickets (id bigint PRIMARY KEY, team_id integer NOT NULL REFERENCES public.teams,
                  event_id bigint NOT NULL REFERENCES public.events);
                CREATE INDEX ON public.events (team_id, id);
                INSERT INTO public.teams VALUES (1, 'One'), (2, 'Two');
                INSERT INTO public.venues VALUES (1, 'Hall');
                INSERT INTO public.events VALUES (101, 1, 'a', 1), (102, 1, 'b', NULL), (201, 2, 'c', 1);
                INSERT INTO public.tickets VALUES (101, 1, 101), (201, 2, 201);
                """, on: location)
            let revision = try await PostgresSyncStore.attach(at: location, schema: Fixtures.clubsSchema)
            try await TestPostgres.withStore(at: location) { store in
                let info = try await store.schemaInfo(version: nil, grant: Self.teamOne)
                #expect(info.rowCounts == ["teams": 1, "venues": 1, "events": 2, "tickets": 1])
                #expect(try await keys(of: "events", store, Self.teamOne) == [101, 102])
                #expect(try await keys(of: "tickets", store, .only([.int(2)])) == [201])
                try await TestPostgres.runScript(
                    "UPDATE public.events SET team_id = 2 WHERE id = 102; DELETE FROM public.tickets WHERE id = 201",
                    on: location)
                let (teamOne, _) = try await feed(after: revision, store, Self.teamOne)
                #expect(teamOne.map(\.revision) == [revision + 1] && teamOne[0]["events"]?.delete == [102])
                let (teamTwo, _) = try await feed(after: revision, store, .only([.int(2)]))
                #expect(teamTwo.map(\.revision) == [revision + 1, revision + 2])
                #expect(teamTwo[0]["events"]?.create == [102] && teamTwo[1]["tickets"]?.delete == [201])
            }
        }
    }

    /// A column the team adds to a scoped table on PostgreSQL, served as a new version read from
    /// the tables: the scope and every type's scope field stay, and a new table is shared.
    @Test func aVersionReadFromTheTablesKeepsTheScope() async throws {
        try await withClubs(.postgres) { store in
            let postgres = try #require(store as? PostgresSyncStore)
            try await TestPostgres.runScript(
                "ALTER TABLE tickets ADD COLUMN note text; CREATE TABLE public.notices (id bigint PRIMARY KEY, body text)",
                on: postgres.location)
            _ = try await postgres.upgradeFromTables(adding: ["notices"])
            let info = try await store.schemaInfo(version: 2, grant: Self.teamOne)
            #expect(info.scope == Fixtures.clubsSchema.scope)
            #expect(info.schema.types.map(\.scopedBy) == Fixtures.clubsSchema.types.map(\.scopedBy) + [nil])
            #expect(info.rowCounts?["tickets"] == 3 && info.rowCounts?["notices"] == 0)
        }
    }

    /// The team's own SQL on PostgreSQL: a row moved by an `UPDATE`, moved twice in one
    /// transaction, deleted, and created then moved, each logged with where it was before.
    @Test func writesOfTheTeamsOwnSQLNameTheScopeTheirRowsLeft() async throws {
        try await withClubs(.postgres) { store in
            let postgres = try #require(store as? PostgresSyncStore)
            let start = try await store.revisions().revision
            try await TestPostgres.runScript(
                """
                UPDATE tickets SET team_id = 2, event_id = 201 WHERE id = 101;
                BEGIN;
                UPDATE events SET team_id = 2 WHERE id = 102;
                DELETE FROM tickets WHERE id = 102;
                UPDATE events SET team_id = 3 WHERE id = 102;
                INSERT INTO tickets (id, team_id, event_id) VALUES (900, 1, 103);
                UPDATE tickets SET team_id = 3, event_id = 301 WHERE id = 900;
                COMMIT;
                BEGIN;
                UPDATE events SET title = 'back' WHERE id = 103;
                UPDATE events SET team_id = 2 WHERE id = 103;
                UPDATE events SET team_id = 1 WHERE id = 103;
                DELETE FROM tickets WHERE id = 103;
                COMMIT;
                """, on: postgres.location)
            let (global, _) = try await feed(after: start, store, .all)
            #expect(global.map(\.revision) == [start + 1, start + 2, start + 3])
            #expect(global[0]["tickets"]?.from == ["101": 1])
            #expect(global[1]["events"]?.from == ["102": 1], "the first scope of the transaction")
            #expect(global[1]["tickets"]?.from == ["102": 1] && global[1]["tickets"]?.create == [900])
            #expect(global[2]["events"]?.from == [:], "a row back in its scope names none")
            #expect(global[2]["tickets"]?.from == ["103": 1])
            let (teamOne, _) = try await feed(after: start, store, Self.teamOne)
            #expect(teamOne.map(\.revision) == [start + 1, start + 2, start + 3])
            #expect(teamOne[0]["tickets"]?.delete == [101])
            #expect(teamOne[1]["events"]?.delete == [102] && teamOne[1]["tickets"]?.delete == [102])
            #expect(teamOne[2]["events"]?.update == [103] && teamOne[2]["tickets"]?.delete == [103])
            let (teamThree, _) = try await feed(after: start, store, .only([.int(3)]))
            #expect(teamThree.map(\.revision) == [start + 2])
            #expect(teamThree[0]["events"]?.create == [102] && teamThree[0]["tickets"]?.create == [900])
            #expect(try await store.schemaInfo(version: nil, grant: .only([.int(3)])).rowCounts?["tickets"] == 4)
        }
    }
}
