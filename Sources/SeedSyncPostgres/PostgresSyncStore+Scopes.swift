import PostgresNIO
public import SeedSyncModel
public import SeedSyncStore

extension PostgresSyncStore {
    /// The change feed as a reader granted some scope values sees it (`SyncStore`), read by the
    /// log's scope indexes (`CaptureSQL.scopeIndexes`): the revisions in which those values or a
    /// shared type changed, at most `limit`, each made `ChangeSet.visible(to:in:)`. So a reader's
    /// catch-up costs what its values changed, not the whole log. `maxRevision` is the last
    /// revision looked through: the newest (or `last`) when fewer than `limit` revisions were
    /// found. A grant of every value, or a dataset without a scope, reads the store's feed.
    ///
    /// The revisions and the state are read in one statement, the change sets in a second one
    /// with the state's `minRevision` again, so a compaction in between is `historyExpired`, never
    /// a change set read empty.
    public func changeFeed(
        after revision: Int64, limit: Int, byteBudget: Int, version: Int?, grant: ScopeGrant, through last: Int64
    ) async throws -> ChangeFeed {
        let served = servedTables.get()
        guard !grant.isAll, let scope = served.schema.scope, let values = grant.sortedValues(as: scope.type) else {
            return try await scannedChangeFeed(
                after: revision, limit: limit, byteBudget: byteBudget, version: version, grant: grant, through: last)
        }
        let projection = try served.versions.projection(version)
        let wanted = max(limit, 1)
        return try await withConnection { [self] connection in
            var binds = PostgresBindings()
            binds.append(revision)
            binds.append(last)
            binds.append(values.compactMap(\.keyString))
            binds.append(Int64(wanted))
            let rows = try await query(Self.scopedRevisionsSQL, binds, on: connection).decode(
                (Int64, Int64, Int64?).self)
            guard let (current, minRevision, _) = rows.first else {
                throw SyncStoreError.schemaMismatch("seedsync._state is empty")
            }
            if revision < minRevision {
                throw SyncStoreError.historyExpired(requested: revision, minRevision: minRevision)
            }
            if revision > current { throw SyncStoreError.revisionAhead(requested: revision, revision: current) }
            let revisions = rows.compactMap(\.2)
            let end = min(last, current)
            var scanned = revisions.count < wanted ? end : revisions.last ?? end
            let logged = try await changeSets(at: revisions, after: revision, projection: projection, on: connection)
            var feed = ChangeFeed.Builder(after: revision, byteBudget: byteBudget)
            for changeSet in logged {
                guard
                    let seen = try ChangeSet(json: JSONParser.parse(changeSet.json)).visible(
                        to: grant, in: projection.target.schema)
                else { continue }
                guard feed.append(EncodedChangeSet(revision: changeSet.revision, json: seen.jsonBytes())) else {
                    scanned = feed.revision
                    break
                }
            }
            return ChangeFeed(maxRevision: scanned, hasMore: scanned < current, changeSets: feed.changeSets)
        }
    }

    /// The logged change sets of `revisions`, in the projection's version.
    ///
    /// - Throws: `SyncStoreError.historyExpired` when compaction (or a bulk revision) removed
    ///   revisions after `after` since they were found.
    private func changeSets(
        at revisions: [Int64], after: Int64, projection: VersionProjection, on connection: PostgresConnection
    ) async throws -> [EncodedChangeSet] {
        guard !revisions.isEmpty else { return [] }
        var binds = PostgresBindings()
        binds.append(revisions)
        var log = ChangeLogReader(projection: projection, served: servedTables.get(), tableSchema: tableSchema)
        for row in try await query(Self.changeSetsAtSQL, binds, on: connection).decode(
            (Int64, Int64, Int64?, String?, String?, String?, ByteBuffer?, String?).self
        ) {
            try log.add(row)
        }
        guard log.minRevision <= after else {
            throw SyncStoreError.historyExpired(requested: after, minRevision: log.minRevision)
        }
        return log.changeSets(at: revisions)
    }

    /// The state's revisions, then the first `$4` revisions after `$1` and through `$2` in which a
    /// row of a scope value of `$3` (text) changed, or left one, or a row of a shared type changed:
    /// three ranges of the scope indexes, merged.
    package static let scopedRevisionsSQL = """
        SELECT s.revision, s.min_revision, r.revision FROM seedsync._state s LEFT JOIN LATERAL (
          SELECT revision FROM (
            (SELECT DISTINCT revision FROM seedsync._changes
              WHERE scope = ANY($3) AND revision > $1 AND revision <= $2 AND op <> 'x' ORDER BY revision LIMIT $4)
            UNION
            (SELECT DISTINCT revision FROM seedsync._changes
              WHERE from_scope = ANY($3) AND revision > $1 AND revision <= $2 AND op <> 'x' ORDER BY revision LIMIT $4)
            UNION
            (SELECT DISTINCT revision FROM seedsync._changes
              WHERE scope IS NULL AND from_scope IS NULL AND revision > $1 AND revision <= $2 AND op <> 'x'
              ORDER BY revision LIMIT $4)
          ) found ORDER BY revision LIMIT $4
        ) r ON true WHERE s.id = 1 ORDER BY r.revision
        """

    /// The state's revisions, then the logged rows of the revisions `$1`, as ``changeFeedSQL``.
    package static let changeSetsAtSQL = """
        SELECT s.revision, s.min_revision, c.revision, c.type, c.key, c.op, c.data, c.from_scope
        FROM seedsync._state s LEFT JOIN LATERAL (
          SELECT revision, type, key, op, data, from_scope FROM seedsync._changes
          WHERE revision = ANY($1) AND op <> 'x'
        ) c ON true WHERE s.id = 1 ORDER BY c.revision
        """
}
