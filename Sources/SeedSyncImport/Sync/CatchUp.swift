import Foundation
import SeedSyncBuild
import SeedSyncClient
import SeedSyncModel
import SeedSyncSQL
import SeedSyncSeed

extension ImportSession {
    /// The most whole-database recoveries (410) in one run: a server whose history keeps
    /// expiring under the importer is an error, not a loop.
    private static let maxRecoveries = 2

    /// `/v1/sync` from the database's revision until `hasMore` is false, one answer ahead: the
    /// next answer is requested and parsed while the current one is applied.
    func catchUp(_ database: inout LocalDatabase, info: SchemaInfo) async throws {
        let applier = ChangeApplier(schema: database.metadata.schema)
        // Types the server has and the database left out (a seed built with --types) are dropped.
        let excluded = Set(info.types.map(\.name)).subtracting(database.metadata.schema.types.map(\.name))
        var revision = try await database.revision()
        var recoveries = 0
        var request = fetch(from: revision)
        defer { request.cancel() }
        while true {
            try Task.checkCancellation()
            let response: SyncResponse
            do {
                response = try await request.value
            } catch let error as SyncClientError where error.code == .historyExpired && recoveries < Self.maxRecoveries {
                recoveries += 1
                database = try await recover(database, minRevision: error.minRevision ?? info.minRevision)
                revision = try await database.revision()
                request = fetch(from: revision)
                continue
            } catch let error as SyncClientError where error.code == .revisionAhead {
                throw ImportError(.revisionAhead, "\(databasePath) is at revision \(revision), which the server has not reached (\(error)); was the server reset? Delete the database to install the seed again")
            }
            if response.hasMore { request = fetch(from: response.maxRevision) }
            let changeSets = response.changeSets.map { $0.removingChanges(ofTypes: excluded) }
            for batch in batches(of: changeSets) {
                try Task.checkCancellation()
                let applied = try await database.apply(Array(batch), with: applier)
                record(applied)
                revision = applied.last?.revision ?? revision
                emit(.progress(revision: revision, serverRevision: max(info.revision, revision)))
            }
            if !response.hasMore { break }
        }
        emit(.caughtUp(revision: revision))
    }

    /// Starts one `/v1/sync` request from `revision`.
    private func fetch(from revision: Int64) -> Task<SyncResponse, any Error> {
        let (client, limit) = (self.client, configuration.syncLimit)
        return Task { try await client.sync(from: revision, limit: limit) }
    }

    /// Change sets grouped into transactions of about ``SeedImporter/Configuration/maxRowsPerTransaction`` rows.
    private func batches(of changeSets: [ChangeSet]) -> [ArraySlice<ChangeSet>] {
        var batches: [ArraySlice<ChangeSet>] = []
        var start = changeSets.startIndex
        var rows = 0
        for (index, changeSet) in zip(changeSets.indices, changeSets) {
            if rows > 0, rows + changeSet.rowCount > configuration.maxRowsPerTransaction {
                batches.append(changeSets[start..<index])
                start = index
                rows = 0
            }
            rows += changeSet.rowCount
        }
        if start < changeSets.endIndex { batches.append(changeSets[start...]) }
        return batches
    }

    private func record(_ applied: [AppliedChangeSet]) {
        for changeSet in applied {
            report.changeSets += 1
            report.inserted += changeSet.created
            report.updated += changeSet.updated
            report.deleted += changeSet.deleted
            emit(.applied(changeSet))
        }
    }

    /// After 410 `history_expired`: the seed again when the server's history reaches it, else a
    /// full snapshot downloaded beside the database; either replaces the database in one transaction.
    private func recover(_ database: LocalDatabase, minRevision: Int64) async throws -> LocalDatabase {
        if let summary = seed.summary, summary.revision < minRevision {
            return try await replaceWithSnapshot(database, minRevision: minRevision)
        }
        let metadata: SeedMetadata
        do {
            metadata = try seed.copy(to: installingPath, expectedSchemaVersion: configuration.expectedSchemaVersion)
        } catch let error as ImportError where Self.rejectsSeed(error) {
            reject(seed: error)
            return try await replaceWithSnapshot(database, minRevision: minRevision)
        }
        defer { SQLiteFiles.remove(at: installingPath) }
        guard metadata.revision >= minRevision, metadata.schema == database.metadata.schema else {
            return try await replaceWithSnapshot(database, minRevision: minRevision)
        }
        return try await replace(database, with: installingPath, revision: metadata.revision, reason: .historyExpired, source: .seed)
    }

    private func replaceWithSnapshot(_ database: LocalDatabase, minRevision: Int64) async throws -> LocalDatabase {
        emit(.downloadingSnapshot(minRevision: minRevision))
        let builder = SeedBuilder(client: client, options: .init(
            output: snapshotPath, types: database.metadata.schema.types.map(\.name), syncLimit: configuration.syncLimit
        ))
        let built: BuildReport
        do {
            built = try await builder.build()
        } catch let error as SeedError {
            // The builder has removed its work file; the database is untouched.
            throw ImportError(error, otherwise: .invalidChangeSet, "cannot download the snapshot that replaces \(databasePath)")
        }
        defer {
            try? FileManager.default.removeItem(atPath: snapshotPath)
            try? FileManager.default.removeItem(atPath: built.manifestPath)
        }
        return try await replace(database, with: snapshotPath, revision: built.manifest.revision, reason: .historyExpired, source: .snapshot)
    }
}

extension ChangeSet {
    /// Rows the change set touches, over every type.
    var rowCount: Int {
        changes.reduce(0) { $0 + $1.create.count + $1.update.count + $1.delete.count }
    }
}
