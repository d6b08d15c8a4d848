import Foundation
import SeedSyncDemo
import SeedSyncModel
import SeedSyncSQLiteStore
import SeedSyncStore

/// Schemas, stores and documents shared by the test targets.
public enum Fixtures {
    /// A schema that uses every field type, a text key and a text reference.
    public static let catalogSchema = DatasetSchema(
        dataset: "catalog",
        schemaVersion: 3,
        types: [
            EntityType(
                name: "authors",
                primaryKey: PrimaryKey(name: "code", type: .text),
                fields: [
                    Field(name: "name", type: .text),
                    Field(name: "born", type: .timestamp, nullable: true),
                    Field(name: "photo", type: .blob, nullable: true),
                ]
            ),
            EntityType(
                name: "books",
                primaryKey: PrimaryKey(name: "id", type: .integer),
                fields: [
                    Field(name: "title", type: .text),
                    Field(name: "author_code", type: .text, nullable: true, references: "authors"),
                    Field(name: "price", type: .real),
                    Field(name: "in_stock", type: .boolean),
                    Field(name: "pages", type: .integer, nullable: true),
                ]
            ),
        ]
    )

    /// A valid `catalog` change set creating one author and one book by them.
    public static func catalogCreation(author: String = "le-guin", book: Int64 = 1) -> ChangeSet {
        ChangeSet(changes: [
            TypeChanges(
                type: "authors",
                create: [.string(author)],
                attributes: [author: ["name": "Ursula K. Le Guin", "born": "1929-10-21T00:00:00Z", "photo": "AAEC"]]
            ),
            TypeChanges(
                type: "books",
                create: [.int(book)],
                attributes: [
                    String(book): [
                        "title": "The Dispossessed", "author_code": .string(author), "price": 12, "in_stock": true,
                    ]
                ]
            ),
        ])
    }

    /// A new store at revision 0 for `schema`.
    public static func emptyStore(
        _ schema: DatasetSchema = catalogSchema, in directory: URL, name: String = "server.sqlite"
    ) async throws -> SQLiteSyncStore {
        let path = directory.appendingPathComponent(name).path
        try await SQLiteSyncStore.create(at: path, schema: schema)
        return try SQLiteSyncStore(path: path)
    }

    /// A new demo store at revision 1.
    public static func demoStore(events: Int = 300, locations: Int = 20, seed: UInt64 = 1, in directory: URL)
        async throws -> SQLiteSyncStore
    {
        let path = directory.appendingPathComponent("demo.sqlite").path
        let dataset = DemoDataset(events: events, locations: locations, seed: seed)
        try await SQLiteSyncStore.create(at: path, schema: DemoDataset.schema) { try await dataset.load(into: $0) }
        return try SQLiteSyncStore(path: path)
    }

    /// Every row of every type `grant` reads, through snapshot pages of `pageSize` rows, in schema
    /// version `version` (the newest when `nil`).
    public static func contents(
        of store: any SyncStore, pageSize: Int = 97, version: Int? = nil, grant: ScopeGrant = .all
    ) async throws -> [String: [[JSONValue]]] {
        var contents: [String: [[JSONValue]]] = [:]
        for type in try await store.schemaInfo(version: version).types {
            var rows: [[JSONValue]] = []
            var after: JSONValue?
            repeat {
                let page = try await store.snapshotPage(
                    of: type.name, after: after, limit: pageSize, version: version, grant: grant)
                rows += page.rows
                after = page.next == .null ? nil : page.next
            } while after != nil
            contents[type.name] = rows
        }
        return contents
    }
}

extension Fixtures {
    /// Runs `writers` concurrent tasks, each committing `commitsPerWriter` catalog creations
    /// (an author and a book of their own) through `commit`, and returns every revision assigned.
    public static func commitConcurrently(
        writers: Int,
        commitsPerWriter: Int,
        _ commit: @escaping @Sendable (ChangeSet) async throws -> Int64
    ) async throws -> [Int64] {
        try await withThrowingTaskGroup(of: [Int64].self) { group in
            for writer in 0..<writers {
                group.addTask {
                    var revisions: [Int64] = []
                    for index in 0..<commitsPerWriter {
                        let creation = catalogCreation(
                            author: "w\(writer)-\(index)", book: Int64(writer * 1_000 + index))
                        revisions.append(try await commit(creation))
                    }
                    return revisions
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
    }
}

extension Fixtures {
    /// `catalogSchema` upgraded to version 4: `authors.name` renamed to `full_name`, `authors.photo`
    /// dropped, `authors.country` added with a default, a new type `publishers`, and new nullable
    /// fields `books.subtitle` and `books.publisher_id` (a reference to it).
    public static let catalogSchemaV4: DatasetSchema = {
        var schema = catalogSchema
        schema.schemaVersion = 4
        schema.types[0].fields = [
            Field(name: "full_name", type: .text), Field(name: "born", type: .timestamp, nullable: true),
            Field(name: "country", type: .text, default: "unknown"),
        ]
        schema.types[1].fields += [
            Field(name: "subtitle", type: .text, nullable: true),
            Field(name: "publisher_id", type: .integer, nullable: true, references: "publishers"),
        ]
        schema.types.append(
            EntityType(
                name: "publishers", primaryKey: PrimaryKey(name: "id", type: .integer),
                fields: [Field(name: "name", type: .text)]))
        return schema
    }()

    /// The rename `catalogSchemaV4` states.
    public static let catalogRenames = [FieldRename(type: "authors", from: "name", to: "full_name")]

    /// What a team runs on PostgreSQL before upgrading to `catalogSchemaV4` (qualified: the test
    /// role is called `seedsync`, like the bookkeeping's schema, which its search path puts first).
    public static let catalogAlterations = """
        ALTER TABLE public.authors RENAME COLUMN name TO full_name;
        ALTER TABLE public.authors DROP COLUMN photo;
        ALTER TABLE public.authors ADD COLUMN country text NOT NULL DEFAULT 'unknown';
        CREATE TABLE public.publishers (id bigint PRIMARY KEY, name text NOT NULL);
        ALTER TABLE public.books ADD COLUMN subtitle text;
        ALTER TABLE public.books ADD COLUMN publisher_id bigint REFERENCES public.publishers DEFERRABLE INITIALLY DEFERRED;
        """
}

extension Fixtures {
    /// A dataset split by team: `teams` (scoped by its key), `events` (scoped by `team_id`, a
    /// reference to its team), `tickets` (scoped by `team_id`, referencing an event) and `venues`
    /// (shared).
    public static let clubsSchema = DatasetSchema(
        dataset: "clubs",
        schemaVersion: 1,
        types: [
            EntityType(
                name: "teams", primaryKey: PrimaryKey(name: "id", type: .integer),
                fields: [Field(name: "name", type: .text)], scopedBy: "id"),
            EntityType(
                name: "venues", primaryKey: PrimaryKey(name: "id", type: .integer),
                fields: [Field(name: "name", type: .text)]),
            EntityType(
                name: "events", primaryKey: PrimaryKey(name: "id", type: .integer),
                fields: [
                    Field(name: "team_id", type: .integer, references: "teams"),
                    Field(name: "title", type: .text),
                    Field(name: "venue_id", type: .integer, nullable: true, references: "venues"),
                ],
                scopedBy: "team_id"),
            EntityType(
                name: "tickets", primaryKey: PrimaryKey(name: "id", type: .integer),
                fields: [
                    Field(name: "team_id", type: .integer, references: "teams"),
                    Field(name: "event_id", type: .integer, references: "events"),
                ],
                scopedBy: "team_id"),
        ],
        scope: ScopeDeclaration(name: "team", type: .integer)
    )

    /// The `clubs` change set retitling `event` of `team` (its venue 1).
    public static func clubsRetitle(_ event: Int64, team: Int64, _ title: String) -> ChangeSet {
        ChangeSet(changes: [
            TypeChanges(
                type: "events", update: [.int(event)],
                attributes: [String(event): ["team_id": .int(team), "title": .string(title), "venue_id": 1]])
        ])
    }

    /// The `clubs` change set creating teams `teams`, venue 1, and for each team `eventsPerTeam`
    /// events (keys `team * 100 + n`, titles `team T event n`) with a ticket each (same key).
    public static func clubsCreation(teams: ClosedRange<Int64>, eventsPerTeam: Int64) -> ChangeSet {
        var events = TypeChanges(type: "events")
        var tickets = TypeChanges(type: "tickets")
        for team in teams {
            for index in 1...eventsPerTeam {
                let key = team * 100 + index
                events.create.append(.int(key))
                events.attributes[String(key)] = [
                    "team_id": .int(team), "title": .string("team \(team) event \(index)"), "venue_id": 1,
                ]
                tickets.create.append(.int(key))
                tickets.attributes[String(key)] = ["team_id": .int(team), "event_id": .int(key)]
            }
        }
        return ChangeSet(changes: [
            TypeChanges(
                type: "teams", create: teams.map { .int($0) },
                attributes: Dictionary(
                    uniqueKeysWithValues: teams.map { (String($0), ["name": .string("Team \($0)")]) })),
            TypeChanges(type: "venues", create: [1], attributes: ["1": ["name": "Hall"]]),
            events, tickets,
        ])
    }

    /// A new `clubs` store with teams 1-3 of `eventsPerTeam` events each, at revision 1.
    public static func clubsStore(eventsPerTeam: Int64 = 3, in directory: URL) async throws -> SQLiteSyncStore {
        let store = try await emptyStore(clubsSchema, in: directory, name: "clubs.sqlite")
        try await store.commit(clubsCreation(teams: 1...3, eventsPerTeam: eventsPerTeam))
        return store
    }
}
