import Foundation
import GRDB
import SeedSyncBuild
import SeedSyncClient
import SeedSyncDemo
import SeedSyncImport
import SeedSyncModel
import SeedSyncSeed
import SeedSyncServer
import SeedSyncStore
import SeedSyncTesting

/// A demo store on one backend served live (with a write token), and a seed built from it, for
/// app databases that write back.
struct WriteBackFixture: Sendable {
    let store: any MaintainedSyncStore
    let url: URL
    let directory: URL
    var seed: String

    func database(_ app: String) -> String {
        directory.appendingPathComponent("\(app)/events.sqlite").path
    }

    func importer(
        _ app: String, token: String = liveServerWriteToken, seed: String? = nil, lockTimeout: Double = 5,
        conflicts: ConflictResolution = .serverWins
    ) -> SeedImporter {
        SeedImporter(
            configuration: .init(
                seed: seed ?? self.seed, database: database(app),
                server: .init(serverURL: url, token: token, requestTimeout: 30, retry: .none),
                syncLimit: 50, lockTimeout: lockTimeout, conflicts: conflicts
            ))
    }

    /// One run of `app`'s importer: its report and the outcomes of its pushes.
    @discardableResult
    func sync(
        _ app: String, token: String = liveServerWriteToken, seed: String? = nil,
        conflicts: ConflictResolution = .serverWins
    ) async throws -> (report: ImportReport, outcomes: [ImportEvent]) {
        let outcomes = Locked<[ImportEvent]>([])
        let report = try await importer(app, token: token, seed: seed, conflicts: conflicts).run { event in
            switch event {
            case .pushed, .conflict, .rejected, .merged, .overwritten: outcomes.update { $0.append(event) }
            default: break
            }
        }
        return (report, outcomes.value)
    }

    /// Changes the server as another writer would: one change set through the store.
    func commit(_ json: String) async throws {
        _ = try await store.commit(try ChangeSet(json: JSONParser.parse(Array(json.utf8))))
    }

    /// Pushes `app`'s oldest queued change set straight to the server, as a push whose answer was
    /// lost: the server applies it, the app does not know. Returns the answer's key map.
    func pushLosingTheAnswer(_ app: String) async throws -> [String: [String: JSONValue]] {
        let (id, json) = try query(app) { db in
            try Row.fetchOne(db, sql: "SELECT id, change_set FROM _seedsync_outbox ORDER BY position").map {
                ($0["id"] as String, $0["change_set"] as String)
            }!
        }
        let pushed = PushedChangeSet(id: id, changeSet: try ChangeSet(json: JSONParser.parse(Array(json.utf8))))
        let answer = try await client(token: liveServerWriteToken).sync(
            from: try await store.schemaInfo().revision, pushing: [pushed])
        guard case .applied(_, let keys)? = answer.results.first?.status else {
            throw TestSetupError("the push was not applied: \(answer.results)")
        }
        return keys
    }

    /// Builds a seed from the server as it is now, beside the first one.
    func buildSeed(_ name: String) async throws -> String {
        let path = directory.appendingPathComponent(name).path
        _ = try await SeedBuilder(client: client(), options: .init(output: path, syncLimit: 50)).build()
        return path
    }

    func client(token: String = liveServerToken) -> SyncClient {
        SyncClient(configuration: .init(serverURL: url, token: token, requestTimeout: 30, retry: .none))
    }

    func serverContents() async throws -> [String: [[JSONValue]]] {
        try await Fixtures.contents(of: store)
    }

    /// The app database's rows of every type.
    func appContents(_ app: String) throws -> [String: [[JSONValue]]] {
        try contents(ofSeed: database(app))
    }

    /// Runs `sql` on `app`'s database with a connection of the test's own.
    func query<T: Sendable>(_ app: String, _ read: @escaping @Sendable (Database) throws -> T) throws -> T {
        let queue = try DatabaseQueue(path: database(app))
        defer { try? queue.close() }
        return try queue.read(read)
    }

    /// A server row: key, fields and revision.
    func serverRow(_ type: String, _ key: JSONValue) async throws -> [JSONValue]? {
        try await serverContents()[type]?.first { $0[0] == key }
    }
}

/// A demo store of 40 events at 6 locations on `backend`, served live, with a seed built from it.
func withWriteBack(
    _ backend: StoreBackend,
    configure: @escaping @Sendable (inout ServerConfiguration) -> Void = { _ in },
    _ body: @escaping @Sendable (WriteBackFixture) async throws -> Void
) async throws {
    try await backend.withDemoStore(events: 40, locations: 6) { store in
        try await withTemporaryDirectory { directory in
            try await withLiveServer(store, configure: configure) { url in
                var fixture = WriteBackFixture(store: store, url: url, directory: directory, seed: "")
                fixture.seed = try await fixture.buildSeed("seed.sqlite")
                try await body(fixture)
            }
        }
    }
}

/// A new location's fields.
func location(_ name: String) -> [String: JSONValue] {
    ["name": .string(name), "city": "Lyon", "latitude": 45.76, "longitude": 4.84]
}

/// A new event's fields, at `location`.
func event(_ title: String, at location: JSONValue) -> [String: JSONValue] {
    [
        "title": .string(title), "starts_at": "2026-12-01T18:00:00Z", "location_id": location, "capacity": 80,
        "cancelled": false,
    ]
}
