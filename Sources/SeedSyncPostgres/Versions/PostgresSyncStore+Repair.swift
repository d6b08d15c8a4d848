import Foundation
import Logging
import PostgresNIO
import SeedSyncModel
import SeedSyncStore

extension PostgresSyncStore {
    /// Mends the change sets logged while a served column was away: renamed and renamed back,
    /// dropped and added again, or retyped and retyped back, with writes in between and no schema
    /// upgrade. Those rows were logged without the field (or with a value of another type), which
    /// their version has: every version that has the field answers them `503 schema_mismatch`,
    /// and a client behind them could only move on by downloading a new snapshot.
    ///
    /// Each such logged row gets the field's value as the row has it in the table now (so a client
    /// that syncs through it ends where the table is); a row deleted since gets the field's
    /// default, or, without one, the zero value of its type (`0`, `""`, `false`, …), which no client
    /// keeps (the delete follows). Nothing else of the log changes, and the other versions read it
    /// as before. One transaction under the store's lock; clients keep their databases.
    ///
    /// ```swift
    /// // after: ALTER TABLE items RENAME COLUMN name TO title; UPDATE items …; ALTER TABLE items RENAME COLUMN title TO name
    /// let repair = try await store.repairLog()
    /// print(repair.rows)  // ["items": 1]
    /// ```
    ///
    /// - Returns: how many logged rows were mended, by type.
    public func repairLog() async throws -> LogRepair {
        try await withTransaction { [self] connection in
            let served = try await lockServed(on: connection)
            var repair = LogRepair()
            for type in served.schema.types {
                let table = try served.table(type.name)
                let mended = try await repairLog(
                    of: type, table: table, history: served.versions.history, on: connection)
                if mended > 0 { repair.rows[type.name] = mended }
            }
            return repair
        }
    }

    /// A logged row that lacks fields of its version: its revision and key, and for each missing
    /// field the member name its version gives it and the column it has now.
    private struct Mend {
        var revision: Int64
        var key: String
        var members: [(member: String, column: String, field: Field)]
    }

    private func repairLog(
        of type: EntityType, table: PostgresTableSQL, history: SchemaHistory, on connection: PostgresConnection
    ) async throws -> Int {
        let newest = history.versions.count - 1
        let lineages = history.lineages(of: type.name).filter { $0.isPresent(in: newest) }
        var mends: [Mend] = []
        var after: (Int64, String) = (Int64.min, "")
        while true {
            var binds = PostgresBindings()
            binds.append(type.name)
            binds.append(after.0)
            binds.append(after.1)
            let rows = try await query(
                """
                SELECT revision, key, data FROM seedsync._changes WHERE type = $1 AND data IS NOT NULL
                AND (revision, key) > ($2, $3) ORDER BY revision, key LIMIT 10000
                """, binds, on: connection)
            guard !rows.isEmpty else { break }
            for (revision, key, data) in try rows.decode((Int64, String, String).self) {
                after = (revision, key)
                if let mend = mend(data, revision: revision, key: key, type: type, lineages: lineages, history: history)
                {
                    mends.append(mend)
                }
            }
        }
        for mend in mends { try await apply(mend, table: table, on: connection) }
        return mends.count
    }

    /// What the logged row `data` lacks: each field its version has (and the newest still has)
    /// that it holds under none of the field's names, or holds as a value of another type.
    private func mend(
        _ data: String, revision: Int64, key: String, type: EntityType, lineages: [FieldLineage],
        history: SchemaHistory
    ) -> Mend? {
        let written = history.index(writing: revision)
        let newest = history.versions.count - 1
        guard let (value, numbers) = try? JSONParser.parseKeepingNumberText(Array(data.utf8)),
            case .object(let members) = value
        else { return nil }
        var missing: [(member: String, column: String, field: Field)] = []
        for lineage in lineages where lineage.isPresent(in: written) {
            let field = lineage.fields[newest]!
            let held = lineage.names.first { members[$0] != nil }
            if let held,
                (try? WireRow.wireValue(
                    members[held]!, text: numbers[held], of: field.type, name: held, row: .string(key), table: ""))
                    != nil
            {
                continue
            }
            missing.append((lineage.fields[written]!.name, field.name, field))
        }
        return missing.isEmpty ? nil : Mend(revision: revision, key: key, members: missing)
    }

    /// Writes the missing members into one logged row: the table's values now, as the capture
    /// writes them (`to_json`), or the field's stand-in when the row is gone.
    private func apply(_ mend: Mend, table: PostgresTableSQL, on connection: PostgresConnection) async throws {
        var binds = PostgresBindings()
        binds.append(mend.revision)
        binds.append(table.type.name)
        binds.append(mend.key)
        var pairs: [String] = []
        var standIns: [String] = []
        for (member, column, field) in mend.members {
            binds.append(member)
            let name = "$\(binds.count)"
            binds.append(String(decoding: JSONWriter.bytes(of: Self.standIn(for: field)), as: UTF8.self))
            standIns.append("\(name), $\(binds.count)::jsonb")
            pairs.append("\(name), to_json(t.\(quote(column)))::jsonb")
        }
        _ = try await query(
            """
            UPDATE seedsync._changes c SET data = (c.data::jsonb || coalesce(
              (SELECT jsonb_build_object(\(pairs.joined(separator: ", "))) FROM \(table.table) t WHERE t.\(table.key)::text = $3),
              jsonb_build_object(\(standIns.joined(separator: ", ")))))::text
            WHERE c.revision = $1 AND c.type = $2 AND c.key = $3
            """, binds, on: connection)
    }

    /// What a row deleted since is mended with, as the log holds it (`to_json`'s forms): the
    /// field's default, else the zero value of its type.
    static func standIn(for field: Field) -> JSONValue {
        if field.type == .blob {
            let bytes = field.default.flatMap {
                if case .string(let text) = $0 { Data(base64Encoded: text) } else { nil }
            }
            return field.default == nil && field.nullable
                ? .null : .string("\\x" + (bytes ?? Data()).map { String(format: "%02x", $0) }.joined())
        }
        if let value = field.default { return value }
        if field.nullable { return .null }
        switch field.type {
        case .integer: return .int(0)
        case .real: return .double(0)
        case .boolean: return .bool(false)
        case .timestamp: return .string("1970-01-01T00:00:00Z")
        case .json: return .object([:])
        case .text, .blob: return .string("")
        }
    }
}

/// What ``PostgresSyncStore/repairLog()`` mended.
public struct LogRepair: Sendable, Hashable {
    /// The logged rows mended, by type; types with none are left out.
    public var rows: [String: Int] = [:]
}
