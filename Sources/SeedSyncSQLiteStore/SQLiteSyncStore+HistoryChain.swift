import Foundation
import GRDB
public import SeedSyncModel
public import SeedSyncStore

/// The history chain in `_seedsync_chain` (revision, 32-byte value), computed by ``HistoryLedger``.
extension SQLiteSyncStore: HistoryChainRecords {
    static let createChainTable =
        "CREATE TABLE IF NOT EXISTS _seedsync_chain (revision INTEGER PRIMARY KEY, chain BLOB NOT NULL)"

    public func historyChains(at revisions: [Int64]) async throws -> [Int64: HistoryChain] {
        try await HistoryLedger(self).chains(at: revisions)
    }

    package func storedChains(at revisions: [Int64]) async throws -> [(Int64, HistoryChain)] {
        try await chainValues(
            "SELECT revision, chain FROM _seedsync_chain WHERE revision IN (SELECT value FROM json_each(?))",
            ["[" + revisions.map(String.init).joined(separator: ",") + "]"])
    }

    package func newestStoredChain(atOrBelow revision: Int64) async throws -> (Int64, HistoryChain)? {
        try await chainValues(
            "SELECT revision, chain FROM _seedsync_chain WHERE revision <= ? ORDER BY revision DESC LIMIT 1", [revision]
        ).first
    }

    package func storeChains(_ values: [(Int64, HistoryChain)]) async throws {
        guard !values.isEmpty else { return }
        try await writeTransaction { db in
            let insert = try db.cachedStatement(
                sql: "INSERT OR IGNORE INTO _seedsync_chain (revision, chain) VALUES (?, ?)")
            for (revision, chain) in values { try insert.execute(arguments: [revision, Data(chain.bytes)]) }
        }
    }

    /// Drops the values below `minRevision` (the value at it stays: a client there sends it).
    static func pruneChain(below minRevision: Int64, in db: Database) throws {
        try db.execute(sql: "DELETE FROM _seedsync_chain WHERE revision < ?", arguments: [minRevision])
    }

    /// The (revision, value) rows `sql` selects.
    private func chainValues(_ sql: String, _ arguments: StatementArguments) async throws -> [(Int64, HistoryChain)] {
        try await pool.read { db in
            try Row.fetchAll(db.cachedStatement(sql: sql), arguments: arguments).compactMap { row in
                let data: Data = row[1]
                return HistoryChain(bytes: Array(data)).map { (row[0], $0) }
            }
        }
    }
}
