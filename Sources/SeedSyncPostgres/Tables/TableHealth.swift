import Logging
import PostgresNIO
import SeedSyncModel

/// Whether a served table can still be served and written: its capture triggers there and
/// enabled, its primary key its key column (``PostgresTableSQL/health``, read in the statements
/// that serve and write it, so the answer holds for that statement).
///
/// A team's DDL can take either away under running servers: a table dropped and created again
/// (a rebuild) has no triggers, so writes to it are not logged, and its rows no longer match the
/// revisions kept for them; a dropped primary key leaves writes nothing to conflict on. Such a
/// table is answered `schema_mismatch` (503) by every page and every write until it is taken
/// back, never served as if nothing happened: a write to it is never confirmed, and the other
/// tables are served on. The way back: `seed-server schema reattach --tables NAME`
/// (``PostgresSyncStore/reattach(_:)``), or the primary key added again.
struct TableHealth {
    /// `nil` when the table is sound, else what ``PostgresTableSQL/health`` found.
    let problem: String?
    /// The table's qualified name, for messages.
    let table: String
    let type: String

    init(_ problem: String?, table: String, type: String) {
        self.problem = problem
        self.table = table
        self.type = type
    }

    /// - Throws: `SyncStoreError.schemaMismatch` saying what happened and what to do.
    func check() throws(SyncStoreError) {
        guard let problem else { return }
        throw .schemaMismatch(Self.message(problem, table: table, type: type))
    }

    static func message(_ problem: String, table: String, type: String) -> String {
        switch problem {
        case "key":
            return
                "\(table) has lost its primary key on the key column (dropped or changed): nothing is served from or written to it until the key is back (ALTER TABLE \(table) ADD PRIMARY KEY (…))"
        default:
            return
                "\(table) has lost its capture triggers (the table was dropped and created again, or the triggers were dropped or disabled), so writes to it are not logged: nothing is served from or written to it until seed-server schema reattach --tables \(type) takes it back (its rows become one bulk revision, and clients download a new snapshot)"
        }
    }

    /// The problems of `tables`, read in one statement: what each that is not sound lacks.
    static func problems(
        of tables: [PostgresTableSQL], tableSchema: String, on connection: PostgresConnection, logger: Logger
    ) async throws -> [TableHealth] {
        guard !tables.isEmpty else { return [] }
        let sql = "SELECT " + tables.map(\.health).joined(separator: ", ")
        var found: [TableHealth] = []
        for row in try await connection.rows(PostgresQuery(unsafeSQL: sql), logger: logger) {
            for (index, cell) in row.makeRandomAccess().enumerated() {
                guard let problem = try cell.decode(String?.self) else { continue }
                let type = tables[index].type.name
                found.append(TableHealth(problem, table: "\(tableSchema).\(type)", type: type))
            }
        }
        return found
    }
}
