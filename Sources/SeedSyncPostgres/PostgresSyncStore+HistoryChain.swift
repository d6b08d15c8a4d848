import PostgresNIO
public import SeedSyncModel
public import SeedSyncStore

/// The history chain in `seedsync._chain` (revision, 32-byte value), computed by ``HistoryLedger``
/// as the server reads the log: so also for the revisions of writers it does not see (psql), the
/// first time it reads them.
extension PostgresSyncStore: HistoryChainRecords {
    static let createChainTable =
        "CREATE TABLE IF NOT EXISTS seedsync._chain (revision bigint PRIMARY KEY, chain bytea NOT NULL)"

    public func historyChains(at revisions: [Int64]) async throws -> [Int64: HistoryChain] {
        try await HistoryLedger(self).chains(at: revisions)
    }

    package func storedChains(at revisions: [Int64]) async throws -> [(Int64, HistoryChain)] {
        var binds = PostgresBindings()
        binds.append(revisions)
        return try await chainValues(
            "SELECT revision, encode(chain, 'hex') FROM seedsync._chain WHERE revision = ANY($1::bigint[])", binds)
    }

    package func newestStoredChain(atOrBelow revision: Int64) async throws -> (Int64, HistoryChain)? {
        var binds = PostgresBindings()
        binds.append(revision)
        return try await chainValues(
            "SELECT revision, encode(chain, 'hex') FROM seedsync._chain WHERE revision <= $1 ORDER BY revision DESC LIMIT 1",
            binds
        ).first
    }

    package func storeChains(_ values: [(Int64, HistoryChain)]) async throws {
        guard !values.isEmpty else { return }
        var binds = PostgresBindings()
        binds.append(values.map(\.0))
        binds.append(values.map(\.1.hex))
        try await withConnection { [self, binds] connection in
            _ = try await query(
                """
                INSERT INTO seedsync._chain (revision, chain)
                SELECT r, decode(c, 'hex') FROM unnest($1::bigint[], $2::text[]) AS t(r, c)
                ON CONFLICT (revision) DO NOTHING
                """, binds, on: connection)
        }
    }

    private func chainValues(_ sql: String, _ binds: PostgresBindings) async throws -> [(Int64, HistoryChain)] {
        try await withConnection { [self, binds] connection in
            try await query(sql, binds, on: connection).compactMap { row in
                let (revision, hex) = try row.decode((Int64, String).self)
                return HistoryChain(hex: hex).map { (revision, $0) }
            }
        }
    }
}
