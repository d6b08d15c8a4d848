import Logging
import PostgresNIO
import SeedSyncModel

extension PostgresSyncStore {
    /// Takes served tables back after their capture was lost: a table dropped and created again
    /// (a rebuild: `CREATE TABLE … AS`, `DROP TABLE`, `CREATE TABLE`, `INSERT … SELECT`), its
    /// triggers dropped, or switched off while writes went by. What the table holds now is what is
    /// served from then on.
    ///
    /// One transaction under the store's lock: each table is checked against the newest version
    /// (as an upgrade checks it: key, columns, types), what is left of its capture is dropped (the
    /// `seedsync_*` triggers, the row revisions, the capture function), the capture is made again
    /// as `init --attach` makes it, and its rows become one bulk revision: the change log is
    /// emptied and `minRevision` moves to it, so clients download a new snapshot (as after
    /// `TRUNCATE` or `seed-server load`), and no client keeps a row the table no longer has.
    ///
    /// ```swift
    /// // after: CREATE TABLE cats_backup AS SELECT * FROM cats; DROP TABLE cats; CREATE TABLE cats (…); INSERT …
    /// let revision = try await store.reattach(["cats"])
    /// ```
    ///
    /// - Returns: the bulk revision.
    /// - Throws: `SyncStoreError.unknownType` for a name the newest version does not serve,
    ///   ``PostgresStoreError`` `tableMismatch` when a table is missing or does not fit the
    ///   newest version; nothing is changed then.
    public func reattach(_ types: [String]) async throws -> Int64 {
        try await withTransaction { [self] connection in
            let served = try await lockServed(on: connection)
            let tables = try types.map { name throws(SyncStoreError) in try served.table(name) }
            for table in tables {
                try await TableCheck(table: table, tableSchema: tableSchema).run(
                    on: connection, logger: logger, allowingExtraColumns: true)
                _ = try await query("LOCK TABLE \(table.table) IN SHARE ROW EXCLUSIVE MODE", on: connection)
                try await Self.checkKeys(of: table, on: connection, logger: logger)
                for statement in CaptureSQL.detach(table) + CaptureSQL.attach(table) {
                    _ = try await query(statement, on: connection)
                }
            }
            let revision = try await query("SELECT seedsync._bulk()", on: connection)[0].decode(Int64.self)
            for table in tables {
                var binds = PostgresBindings()
                binds.append(revision)
                _ = try await query(CaptureSQL.adopt(table), binds, on: connection)
            }
            return revision
        }
    }
}
