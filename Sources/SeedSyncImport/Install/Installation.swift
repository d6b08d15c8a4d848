import Foundation
import GRDB
import SeedSyncBuild
import SeedSyncClient
import SeedSyncModel
import SeedSyncSQL
import SeedSyncSeed

extension ImportSession {
    /// Opens the database, installing the seed when there is none and replacing the database when
    /// the seed is newer.
    func prepareDatabase(server: SchemaInfo?) async throws -> LocalDatabase {
        guard let database = try await LocalDatabase.open(at: databasePath, app: appDatabase) else {
            return try await install(server: server)
        }
        // A published seed is read to install, not on every run: there is nothing shipped to compare.
        guard configuration.reseedIfNewer, configuration.shipsSeed else { return database }
        do {
            return try await replaceIfSeedIsNewer(database, server: server)
        } catch {
            try? await database.close()
            throw error
        }
    }

    /// Copies and checks the seed beside the database, switches the copy to WAL, then renames it into place.
    ///
    /// The seed is the one published at ``SeedImporter/Configuration/seedURL`` when the app gives
    /// one, downloaded first. Otherwise the app weighs the ways it has (``WayIn``): the shipped
    /// seed, the newest one the server offers (``offeredSeed(_:)``), and a snapshot; without a
    /// server to ask, it installs the shipped seed.
    ///
    /// The copy is switched before the rename, so the file at the database path is in WAL mode
    /// from its first moment: a kill can leave a hot rollback journal beside the copy, which the
    /// next run deletes with it, but never beside the database.
    ///
    /// A seed older than the server's history (its revision before `minRevision`) could not catch
    /// up: it is not installed only to be thrown away, a snapshot is (``installSnapshot(seedRevision:server:)``).
    private func install(server: SchemaInfo?) async throws -> LocalDatabase {
        if let url = configuration.seedURL { return try await installPublished(url, registered: nil, server: server) }
        // Nothing to install without the server but a shipped seed: asked again, its error ends the run.
        let server = configuration.seed.isEmpty ? try await reachable(server) : server
        guard let server else { return try await installShipped(server: nil) }
        switch try await weigh(server: server) {
        case .shipped: return try await installShipped(server: server)
        case .snapshot: return try await installSnapshot(server: server)
        case .offered(let url, let registered, let description):
            emit(.foundPublishedSeed(url: url, revision: registered.revision))
            do {
                return try await installPublished(url, registered: registered, described: description, server: server)
            } catch let error where Self.isUnusable(error) {
                // The seed the server offers is not there (not uploaded yet, removed) or not the one
                // registered: a snapshot does instead, and the run says why.
                PublishedSeed.remove(files.download)
                refuse(offered: url, error, instead: "a snapshot was installed instead")
                return try await installSnapshot(server: server)
            }
        }
    }

    private func installShipped(server: SchemaInfo?) async throws -> LocalDatabase {
        report.installedFrom = InstallSource(.shippedSeed, configuration.seed)
        return try await installSeed(server: server)
    }

    /// Reports an offered seed that cannot be used, and what the run does `instead`.
    func refuse(offered url: URL, _ error: any Error, instead: String) {
        let reason = "the seed the server offers, \(url.absoluteString), could not be used: \(error); \(instead)"
        report.seedProblem = reason
        emit(.seedRejected(reason: reason))
    }

    /// Downloads the seed published at `url` (the one the server registered as `registered`,
    /// when it offered it; its manifest `described` already, when weighed), installs it and
    /// removes the download.
    private func installPublished(
        _ url: URL, registered: RegisteredSeed?, described: PublishedSeed.Description? = nil, server: SchemaInfo?
    ) async throws -> LocalDatabase {
        report.installedFrom = InstallSource(.publishedSeed, url.absoluteString)
        seed = try await publishedSeed(url, registered: registered).fetch(
            with: client, described: described, emit: emit)
        let database = try await installSeed(server: server)
        PublishedSeed.remove(files.download)
        return database
    }

    func publishedSeed(_ url: URL, registered: RegisteredSeed?) -> PublishedSeed {
        PublishedSeed(
            url: url, folder: files.download, trustedKeys: configuration.trustedKeys, registered: registered?.sha256)
    }

    /// Whether `error` says that an offered seed cannot be used, whatever the next run does: it is
    /// not found, or its files are not the seed registered, or not trusted. A network failure is
    /// not one: the next run resumes the download.
    static func isUnusable(_ error: any Error) -> Bool {
        if let error = error as? SyncClientError { return error.code == .notFound }
        guard let error = error as? ImportError else { return false }
        return [.invalidSeed, .untrustedSeed, .mismatch].contains(error.code)
    }

    /// `server`, or the server's schema asked again: its error (unreachable) ends the run.
    private func reachable(_ server: SchemaInfo?) async throws -> SchemaInfo {
        if let server { return server }
        return try await client.schema()
    }

    /// The newest seed the server offers this app (`GET /v1/seeds`,
    /// ``PublishedSeed/newest(of:for:version:base:)``) and its address, or `nil` when it offers none.
    func offeredSeed(_ server: SchemaInfo) async throws -> (URL, RegisteredSeed)? {
        let version = configuration.expectedSchemaVersion ?? server.schemaVersion
        let offered = try await client.registeredSeeds()
        return PublishedSeed.newest(of: offered, for: server, version: version, base: configuration.server.serverURL)
    }

    private func installSeed(server: SchemaInfo?) async throws -> LocalDatabase {
        if let server, let summary = seed.summary {
            try check(summary, against: server)
            if summary.revision < server.minRevision {
                return try await installSnapshot(seedRevision: summary.revision, server: server)
            }
        }
        let metadata = try seed.copy(
            to: files.installing.path, expectedSchemaVersion: configuration.expectedSchemaVersion)
        if let server, metadata.revision < server.minRevision {
            files.installing.remove()
            return try await installSnapshot(seedRevision: metadata.revision, server: server)
        }
        let database = try await place(files.installing.path, checking: metadata, against: server)
        emit(.installed(revision: metadata.revision))
        return database
    }

    /// Installs a snapshot of the server instead of a seed that could not catch up.
    private func installSnapshot(seedRevision: Int64, server: SchemaInfo) async throws -> LocalDatabase {
        let reason =
            "the seed \(seed.path) is at revision \(seedRevision), older than the server's history (from revision \(server.minRevision)): it could not catch up, so a snapshot was installed instead"
        report.seedProblem = reason
        emit(.seedSkipped(revision: seedRevision, minRevision: server.minRevision))
        return try await installSnapshot(server: server, seedVersion: seed.summary?.schemaVersion)
    }

    /// Installs a snapshot of the server, in the version the app wants when the server serves it
    /// (no migration to follow), else `seedVersion` (the seed's that could not catch up), else the
    /// newest the server serves below it (a later run migrates).
    ///
    /// - Throws: ``ImportError/Code/mismatch`` when the server serves only versions newer than the app's.
    private func installSnapshot(server: SchemaInfo, seedVersion: Int? = nil) async throws -> LocalDatabase {
        report.installedFrom = InstallSource(.snapshot, configuration.server.serverURL.absoluteString)
        let wanted = configuration.expectedSchemaVersion ?? server.schemaVersion
        let served = server.servedVersions
        guard let version = served.contains(wanted) ? wanted : seedVersion ?? served.filter({ $0 < wanted }).max()
        else {
            throw ImportError(
                .mismatch,
                "the app expects schema version \(wanted), but the server serves only newer ones (\(served.map(String.init).joined(separator: ", "))); nothing was installed"
            )
        }
        emit(.downloadingSnapshot(minRevision: server.minRevision))
        let built = try await downloadSnapshot(types: nil, version: version)
        defer { try? FileManager.default.removeItem(atPath: built.manifestPath) }
        let metadata = try SeedFile.read(snapshot.output) { try $0.metadata() }
        let database = try await place(snapshot.output, checking: metadata, against: server)
        emit(.installed(revision: built.manifest.revision))
        return database
    }

    /// Puts the finished file at `source` in place as the database, checked against the server:
    /// switched to WAL, renamed, its folder synced; or, into the app's own database, copied page by
    /// page (``LocalDatabase/install(_:into:)``). `source` is removed in any case.
    private func place(_ source: String, checking metadata: SeedMetadata, against server: SchemaInfo?) async throws
        -> LocalDatabase
    {
        let database: LocalDatabase
        do {
            if let server {
                try check(metadata, against: server)
                try checkScopes(of: metadata, against: server)
            }
            if let appDatabase {
                defer { DatabaseFiles(source).remove() }
                database = try await LocalDatabase.install(source, into: appDatabase)
            } else {
                database = try rename(source)
            }
        } catch let error as SeedError {
            DatabaseFiles(source).remove()
            throw ImportError(error, otherwise: .invalidDatabase, "the seed was not installed")
        } catch {
            DatabaseFiles(source).remove()
            throw error
        }
        report.installed = true
        return database
    }

    /// The file at `source`, switched to WAL, renamed to the database path, its folder synced, and opened.
    private func rename(_ source: String) throws -> LocalDatabase {
        try LocalDatabase.switchToWAL(at: source)
        // Journals of an older database that is gone would be replayed onto the new file.
        DatabaseFiles(databasePath).removeCompanions()
        try FileSystem.rename(source, to: databasePath)
        FileSystem.syncDirectory(of: databasePath)
        guard let database = try LocalDatabase.open(at: databasePath) else {
            throw ImportError(.invalidDatabase, "\(databasePath) disappeared right after it was installed")
        }
        return database
    }

    /// Replaces the database with the seed when the seed is newer. A newer seed that cannot be
    /// used (damaged, for a schema the server does not serve yet, no space to copy it) is
    /// reported (``ImportEvent/seedRejected(reason:)``, ``ImportReport/seedProblem``) and the database
    /// is kept: a healthy database goes on syncing whatever the seed.
    private func replaceIfSeedIsNewer(_ database: LocalDatabase, server: SchemaInfo?) async throws -> LocalDatabase {
        var local = database.metadata
        local.revision = try await database.revision()
        if let summary = seed.summary, !isNewer(summary.dataset, summary.schemaVersion, summary.revision, than: local) {
            return database
        }
        let metadata: SeedMetadata
        do {
            if let server, let summary = seed.summary { try check(summary, against: server) }
            metadata = try seed.copy(
                to: files.installing.path, expectedSchemaVersion: configuration.expectedSchemaVersion)
            if let server {
                try check(metadata, against: server)
                try checkScopes(of: metadata, against: server)
            }
        } catch let error as ImportError where Self.rejectsSeed(error) {
            // Only the seed's own failures: a failure of the replacement below is the database's.
            files.installing.remove()
            reject(seed: error)
            return database
        }
        defer { files.installing.remove() }
        guard isNewer(metadata.dataset, metadata.schemaVersion, metadata.revision, than: local) else { return database }
        return try await replace(
            database, with: files.installing.path, revision: metadata.revision, reason: .newerSeed, source: .seed)
    }

    /// Whether `error` is about the seed alone, so that a database can go on without it.
    static func rejectsSeed(_ error: ImportError) -> Bool {
        error.code == .invalidSeed || error.code == .untrustedSeed || error.code == .mismatch || error.code == .storage
    }

    /// Reports a seed that could not be used while the database goes on.
    func reject(seed error: ImportError) {
        report.seedProblem = error.description
        emit(.seedRejected(reason: error.description))
    }

    /// Whether a seed replaces the database: same dataset and schema version, later revision. A
    /// seed of a newer version does not: the database migrates in place instead, keeping its rows
    /// and local edits (see ``migrate(_:to:server:newest:)``).
    private func isNewer(_ dataset: String, _ schemaVersion: Int, _ revision: Int64, than local: SeedMetadata) -> Bool {
        dataset == local.dataset && schemaVersion == local.schemaVersion && revision > local.revision
    }

    func replace(
        _ database: LocalDatabase, with source: String, revision: Int64, reason: Replacement.Reason,
        source kind: Replacement.Source
    ) async throws -> LocalDatabase {
        let from = try await database.revision()
        let carried: [ImportEvent]
        let replaced: LocalDatabase
        do {
            carried = try await carryOutbox(of: database, into: source)
            replaced = try await database.replaced(with: source)
        } catch {
            _ = try? await database.write("unmark \(databasePath)") { db in try Outbox.unmarkReplacing(in: db) }
            throw error
        }
        let replacement = Replacement(reason: reason, source: kind, fromRevision: from, toRevision: revision)
        report.replacements.append(replacement)
        emit(.replaced(replacement))
        record(carried)
        return replaced
    }

    /// Local change sets waiting in `database` are written into the replacing file `source`
    /// first, so the replacement keeps them (see ``PendingChanges/carry(_:shadowing:into:)``).
    /// The database is marked as being replaced in the transaction that reads them, so that no
    /// local write commits to it until the replacement is done (see ``SeedImporter/write(_:)``).
    private func carryOutbox(of database: LocalDatabase, into source: String) async throws -> [ImportEvent] {
        let pending = PendingChanges(schema: database.metadata.schema)
        let (entries, rows) = try await database.write("mark \(databasePath) as being replaced") { db in
            try Outbox.markReplacing(in: db)
            return (try pending.outbox.entries(in: db), try pending.outbox.shadowedRows(in: db))
        }
        guard !entries.isEmpty else { return [] }
        do {
            return try pending.carry(entries, shadowing: rows, from: database.metadata.schemaHash, into: source)
        } catch let error as DatabaseError {
            throw ImportError(
                SeedError.database(error, "carry \(entries.count) local change sets into \(source)", file: source),
                otherwise: .invalidDatabase, "\(databasePath) was not replaced and keeps its rows and its outbox")
        }
    }
}
