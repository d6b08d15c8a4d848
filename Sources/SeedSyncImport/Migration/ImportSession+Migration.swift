import Foundation
import SeedSyncClient
import SeedSyncModel
import SeedSyncSQL
import SeedSyncSeed

extension ImportSession {
    /// Rows per page of a migration's downloads (the server caps it: 50,000 by default).
    static let migrationPageSize = 50_000

    /// The version the database should be in: the one the app expects, else the newest the server
    /// serves; `nil` when that is the database's, or the server does not serve it yet (the app is
    /// ahead of the server: it goes on in the version it has).
    func migrationTarget(for database: LocalDatabase, newest: SchemaInfo) -> Int? {
        let wanted = configuration.expectedSchemaVersion ?? newest.schemaVersion
        guard wanted > database.metadata.schemaVersion else { return nil }
        guard newest.servedVersions.contains(wanted) else {
            report.expectedVersionNotServed = wanted
            return nil
        }
        return wanted
    }

    /// Moves the database to schema version `version` in place, keeping its rows, its revision and
    /// its local edits: downloads the new types whole and the new columns alone (keys and new
    /// fields, paged; a new field that holds one value in every row, such as a column added with a
    /// default, is not downloaded but filled in: ``uniformFields(of:old:version:from:scopes:)``), then the change sets from the database's revision in the new version, into
    /// `files.migration.path`; then the database takes them in one transaction
    /// (``LocalDatabase/migrated(from:to:changes:staging:)``). The catch-up that follows goes on
    /// in the new version.
    ///
    /// Types the database left out (a seed built with `--types`) stay out; types the new version
    /// adds come in.
    ///
    /// - Parameter server: the server's schema in the database's version.
    func migrate(_ database: inout LocalDatabase, to version: Int, server: SchemaInfo, newest: SchemaInfo)
        async throws
    {
        let old = database.metadata.schema
        let excluded = Set(server.types.map(\.name)).subtracting(old.types.map(\.name))
        var new = try await client.schema(version: version).schema
        new.types.removeAll { excluded.contains($0.name) }
        let changes: [SchemaChange]
        do {
            changes = try SchemaHistory.migration(
                from: old, to: new, renames: newest.renames(after: old.schemaVersion, through: version))
        } catch {
            throw ImportError(
                .mismatch,
                "\(databasePath) cannot move from schema version \(old.schemaVersion) to \(version): \(error)")
        }
        emit(.migrating(from: old.schemaVersion, to: version))
        let fromRevision = try await database.revision()
        let bytesBefore = client.bytesReceived
        let scopes = server.scopes.map(ScopeList.init)
        let (staged, uniform) = try await uniformFields(
            of: Self.stagedTypes(changes, from: old, to: new), old: old, version: version, from: fromRevision,
            scopes: scopes)
        let staging = try MigrationStaging(at: files.migration.path, types: staged, uniform: uniform)
        defer { files.migration.remove() }
        let rows = try await stage(
            into: staging, version: version, from: fromRevision, old: old, excluded: excluded, scopes: scopes)
        let (migrated, applied, events) = try await database.migrated(
            from: old, to: new, changes: changes, staging: staging)
        database = migrated
        record(applied)
        record(events)
        let migration = Migration(
            fromVersion: old.schemaVersion, toVersion: version, fromRevision: fromRevision,
            toRevision: try await database.revision(), changes: changes.map(\.description), rowsDownloaded: rows,
            bytesDownloaded: client.bytesReceived - bytesBefore,
            fieldsFilled: uniform.flatMap { type, values in values.keys.map { "\(type).\($0)" } }.sorted())
        report.migration = migration
        emit(.migrated(migration))
    }

    /// Downloads what the migration needs into `staging` and closes it, also on failure; returns the rows.
    private func stage(
        into staging: MigrationStaging, version: Int, from revision: Int64, old: DatasetSchema, excluded: Set<String>,
        scopes: ScopeList?
    ) async throws -> Int {
        do {
            let rows = try await download(
                into: staging, version: version, from: revision, old: old, excluded: excluded, scopes: scopes)
            try staging.close()
            return rows
        } catch {
            try? staging.close()
            throw error
        }
    }

    /// What a migration downloads: a new type whole, a type that gained fields as its key and
    /// those fields.
    private static func stagedTypes(_ changes: [SchemaChange], from old: DatasetSchema, to new: DatasetSchema)
        -> [EntityType]
    {
        new.types.compactMap { type in
            guard old.type(named: type.name) != nil else { return type }
            let added = changes.compactMap { change -> String? in
                if case .fieldAdded(type.name, let field) = change { field } else { nil }
            }
            guard !added.isEmpty else { return nil }
            var columns = type
            columns.fields = type.fields.filter { added.contains($0.name) }
            return columns
        }
    }

    /// The new fields of the types the database has that hold one value in every row, asked of the
    /// server (``SyncClient/uniformFields(of:fields:schemaVersion:notBefore:scopes:)``, read at
    /// `revision` or later, so a row the catch-up from `revision` leaves alone holds that value),
    /// taken out of `staged`: those are filled in locally, not downloaded. A type left with no
    /// field to download is not staged. A server that does not answer it: every field downloaded.
    ///
    /// - Returns: the types still to download, and the uniform values by type and field.
    private func uniformFields(
        of staged: [EntityType], old: DatasetSchema, version: Int, from revision: Int64, scopes: ScopeList?
    ) async throws -> (staged: [EntityType], uniform: [String: [String: JSONValue]]) {
        var remaining: [EntityType] = []
        var uniform: [String: [String: JSONValue]] = [:]
        for var type in staged {
            guard old.type(named: type.name) != nil,
                let answer = try await client.uniformFields(
                    of: type.name, fields: type.fields.map(\.name), schemaVersion: version, notBefore: revision,
                    scopes: type.isScoped ? scopes : nil)
            else {
                remaining.append(type)
                continue
            }
            if !answer.values.isEmpty { uniform[type.name] = answer.values }
            type.fields.removeAll { answer.values[$0.name] != nil }
            if !type.fields.isEmpty { remaining.append(type) }
        }
        return (remaining, uniform)
    }

    /// The staged types' pages, read at `revision` or later (the change sets are staged from it),
    /// then the change sets from `revision` until the server has no more, in `version`, into
    /// `staging`. `scopes`: the values of a reader of some, named in the addresses.
    ///
    /// - Returns: the rows downloaded.
    private func download(
        into staging: MigrationStaging, version: Int, from revision: Int64, old: DatasetSchema, excluded: Set<String>,
        scopes: ScopeList?
    ) async throws -> Int {
        try await fill(staging, version: version, from: revision, excluded: excluded, scopes: scopes) { type in
            let isNew = old.type(named: type.name) == nil
            return (isNew ? nil : type.fields.map(\.name), type.isScoped ? scopes : nil)
        }
    }

    /// Fills `staging`: each staged type's pages from its first row (the fields and scope values
    /// `pages` gives for it, every one when `nil`), read at `revision` or later, then the change
    /// sets after `revision` (read for `scopes`) until the server has no more, in `version`, those
    /// of `excluded` types dropped.
    ///
    /// - Returns: the rows downloaded.
    func fill(
        _ staging: MigrationStaging, version: Int, from revision: Int64, excluded: Set<String>, scopes: ScopeList?,
        pages: (EntityType) -> (fields: [String]?, scopes: ScopeList?)
    ) async throws -> Int {
        var rows = 0
        for type in staging.types.values.sorted(by: { $0.name < $1.name }) {
            var after: JSONValue?
            let (fields, named) = pages(type)
            let pages = client.snapshotPages(
                of: type.name, after: nil, limit: Self.migrationPageSize, schemaVersion: version, fields: fields,
                notBefore: revision, scopes: named)
            for try await (page, _) in pages {
                try Task.checkCancellation()
                after = try staging.insert(page, after: after)
                rows += page.rows.count
            }
        }
        let feed = client.changeFeed(
            from: revision, limit: configuration.syncLimit, schemaVersion: version, scopes: scopes)
        for try await response in feed {
            try Task.checkCancellation()
            try staging.append(response) { $0.removingChanges(ofTypes: excluded).removingOldIDs() }
        }
        return rows
    }
}
