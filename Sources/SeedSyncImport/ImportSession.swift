import Foundation
import GRDB
import SeedSyncBuild
import SeedSyncClient
import SeedSyncModel
import SeedSyncSQL
import SeedSyncSeed

/// One run of a ``SeedImporter``, under its lock: the state the steps share.
final class ImportSession {
    let configuration: SeedImporter.Configuration
    /// The app's own connection to the database, when it handed one over.
    let appDatabase: (any DatabaseWriter)?
    let client: SyncClient
    /// The shipped seed, read when a step needs it (a push never does, unless the server's history
    /// no longer reaches the database); the downloaded one, once an install has fetched it
    /// (``SeedImporter/Configuration/seedURL``).
    lazy var seed = ShippedSeed(path: configuration.seed, trustedKeys: configuration.trustedKeys)
    let emit: @Sendable (ImportEvent) -> Void
    /// A ``SyncEngine``'s edit sessions, which the run lets in; `nil` for an importer of its own.
    let editing: EditSessions?
    /// The server's schema in the database's version, once the run has caught up in it.
    private(set) var served: SchemaInfo?
    var report: ImportReport
    let start = ContinuousClock.now

    var databasePath: String { configuration.database }
    /// The database's files, and the importer's beside it: `installing` where the seed is copied
    /// and checked before it is installed, `migration` where a migration stages its downloads.
    var files: DatabaseFiles { DatabaseFiles(databasePath) }
    /// Where a full snapshot is downloaded after a 410, and the files of its build.
    var snapshot: SeedFiles { SeedFiles(output: files.snapshot.path) }

    init(
        configuration: SeedImporter.Configuration, appDatabase: (any DatabaseWriter)?, editing: EditSessions?,
        emit: @escaping @Sendable (ImportEvent) -> Void
    ) {
        self.configuration = configuration
        self.appDatabase = appDatabase
        self.editing = editing
        self.emit = emit
        client = SyncClient(configuration: configuration.server) { attempt, error, delay in
            emit(.retrying(attempt: attempt, delay: delay, reason: error.description))
        }
        report = ImportReport(database: configuration.database)
    }

    func run() async throws -> ImportReport {
        removeLeftovers()
        // Asked first so that a seed for another dataset is refused before it is installed. A
        // server that cannot be reached (or fails) still lets the seed be installed, then fails the
        // run; any other refusal (a wrong token, say) stops before anything is touched.
        let server: Result<SchemaInfo, any Error>
        do {
            server = .success(try await client.schema())
        } catch let error as SyncClientError where error.code == .unreachable || error.code == .serverError {
            server = .failure(error)
        }
        var database = try await prepareDatabase(server: try? server.get())
        // A mark left by a replacement that was killed would hold local writes back all run long.
        if try await database.read({ db in try Outbox.isMarkedReplacing(in: db) }) {
            try await database.write("unmark \(databasePath)") { db in try Outbox.unmarkReplacing(in: db) }
        }
        if let expected = configuration.expectedSchemaVersion, database.metadata.schemaVersion > expected {
            try? await database.close()
            throw ImportError(
                .invalidDatabase,
                "\(databasePath) has schema version \(database.metadata.schemaVersion), newer than the \(expected) this app expects; delete the database to install the seed again"
            )
        }
        do {
            try await sync(&database, server: server.get())
        } catch {
            try? await database.close()
            throw error
        }
        return try await finish(database)
    }

    /// A ``SyncEngine``'s push into the database a run has installed: a catch-up in its schema
    /// version against `served` (the server's schema in that version, as the last run read it).
    /// No schema request, no install check, no migration: when the database is gone or in another
    /// version (a replacement or a migration since), or anything else fails, the engine runs whole.
    func push(against served: SchemaInfo) async throws -> ImportReport {
        guard var database = try await LocalDatabase.open(at: databasePath, app: appDatabase) else {
            throw ImportError(.invalidDatabase, "there is no database at \(databasePath) to push from")
        }
        do {
            try check(database.metadata, against: served)
            guard database.metadata.schemaVersion == served.schemaVersion else {
                throw ImportError(
                    .mismatch,
                    "\(databasePath) is in schema version \(database.metadata.schemaVersion), not the \(served.schemaVersion) the push was for"
                )
            }
            report.fromRevision = try await database.revision()
            let mayPush = try await catchUp(&database, info: served)
            try await caughtUp(database, info: served, mayPush: mayPush)
        } catch {
            try? await database.close()
            throw error
        }
        return try await finish(database)
    }

    /// Closes the database a run or a push caught up: the report.
    private func finish(_ database: LocalDatabase) async throws -> ImportReport {
        // Closing writes nothing new (it checkpoints): an edit session need not wait for it.
        editing?.doneApplying()
        try await database.close()
        // A run that caught up has no use for a snapshot download an earlier run left unfinished.
        snapshot.partial.remove()
        report.seconds = (ContinuousClock.now - start).seconds
        return report
    }

    /// The end of a catch-up in `info`'s version: the report says where the database is, and a
    /// token that may not push ends the run with ``ImportError/Code/pushForbidden``.
    private func caughtUp(_ database: LocalDatabase, info: SchemaInfo, mayPush: Bool) async throws {
        served = info
        report.toRevision = try await database.revision()
        report.schemaVersion = database.metadata.schemaVersion
        if !mayPush { throw try await pushForbidden(database) }
    }

    /// Catches up in the database's schema version, which the server must serve (the newest, or
    /// an older one it keeps); then, when the app wants a newer version the server serves (see
    /// ``migrationTarget(for:newest:)``), migrates the database to it in place and catches up
    /// in it. The first catch-up pushes the local edits in the version they were written in.
    private func sync(_ database: inout LocalDatabase, server newest: SchemaInfo) async throws {
        let info = try await serverInfo(for: database, newest: newest)
        try check(database.metadata, against: info)
        report.fromRevision = try await database.revision()
        database = try await reconcileScopes(database, with: info)
        var mayPush = try await catchUp(&database, info: info)
        if let target = migrationTarget(for: database, newest: newest) {
            try await migrate(&database, to: target, server: info, newest: newest)
            let migrated = try await serverInfo(for: database, newest: newest)
            try check(database.metadata, against: migrated)
            mayPush = try await catchUp(&database, info: migrated) && mayPush
            try await caughtUp(database, info: migrated, mayPush: mayPush)
            return
        }
        try await caughtUp(database, info: info, mayPush: mayPush)
    }

    /// The server's schema in the database's version: `newest`, or that version read.
    private func serverInfo(for database: LocalDatabase, newest: SchemaInfo) async throws -> SchemaInfo {
        let version = database.metadata.schemaVersion
        guard version != newest.schemaVersion, newest.servedVersions.contains(version) else { return newest }
        return try await client.schema(version: version)
    }

    /// Files a killed run may leave beside the database: an unfinished copy, snapshot or migration
    /// download. An unfinished snapshot download (`.snapshot.partial`) is kept: the snapshot, the
    /// lowest-priority work of a run, yields to an edit session or a stop (see ``SyncEngine``), and
    /// the next download goes on from its last whole page (``downloadSnapshot(types:version:)``).
    private func removeLeftovers() {
        for leftover in [files.installing, files.snapshot, DatabaseFiles(snapshot.finished), files.migration] {
            leftover.remove()
        }
        try? FileManager.default.removeItem(atPath: snapshot.manifest)
    }

    /// The seed or database must be for the server's dataset and a schema version it serves, and
    /// every type in it must be defined as the server defines it in that version (checked when
    /// `info` is that version's; an older version's types are checked once it is read, by `sync`).
    func check(_ metadata: SeedMetadata, against info: SchemaInfo) throws {
        guard metadata.dataset == info.dataset, info.servedVersions.contains(metadata.schemaVersion) else {
            throw ImportError(
                .mismatch,
                "\(databasePath) holds dataset '\(metadata.dataset)' schema version \(metadata.schemaVersion), but the server serves '\(info.dataset)' schema versions \(Self.list(info.servedVersions)); ship a seed built from this server"
            )
        }
        guard metadata.schemaVersion == info.schemaVersion else { return }
        for type in metadata.schema.types where !info.types.contains(type) {
            throw ImportError(
                .mismatch,
                "the server defines type '\(type.name)' differently from \(databasePath) under the same schema version \(info.schemaVersion)"
            )
        }
    }

    /// A seed holds no row of a scope value the token does not grant: one of other values (a
    /// seed of another team) is refused. A seed of every value is installed, and the rows the
    /// token does not read leave it before the catch-up (``reconcileScopes(_:with:)``).
    func checkScopes(of seed: SeedMetadata, against info: SchemaInfo) throws {
        guard let held = seed.scopes, let granted = info.scopes, let scope = info.scope,
            !ScopeGrant.only(held).isSubset(of: .only(granted))
        else { return }
        let others = held.filter { !ScopeGrant.only(granted).includes($0) }.compactMap(\.keyString)
        throw ImportError(
            .mismatch,
            "the seed \(self.seed.path) holds the rows of \(scope.name) \(others.joined(separator: ", ")), which the token does not grant (it grants \(granted.compactMap(\.keyString).joined(separator: ", "))); ship the seed of this token's \(scope.name) (seed-build with its token); nothing was installed"
        )
    }

    func check(_ seed: ShippedSeed.Summary, against info: SchemaInfo) throws {
        guard seed.dataset == info.dataset, info.servedVersions.contains(seed.schemaVersion) else {
            throw ImportError(
                .mismatch,
                "the seed \(self.seed.path) is dataset '\(seed.dataset)' schema version \(seed.schemaVersion), but the server serves '\(info.dataset)' schema versions \(Self.list(info.servedVersions)); nothing was installed"
            )
        }
    }

    private static func list(_ versions: [Int]) -> String {
        versions.map(String.init).joined(separator: ", ")
    }
}
