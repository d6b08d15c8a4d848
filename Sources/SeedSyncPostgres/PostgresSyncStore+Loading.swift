import Foundation
import PostgresNIO
import SeedSyncModel
public import SeedSyncStore

extension PostgresSyncStore: MaintainedSyncStore {
    /// Loads rows in bulk as one new revision, in one transaction: each source is streamed with
    /// `COPY` into a temporary table (memory stays flat however large the input), then upserted
    /// into its table. Like every bulk revision, it empties the change log and moves
    /// `minRevision` to the new revision; clients older than it download a new snapshot.
    ///
    /// - Returns: the revision and the rows loaded per type.
    /// - Throws: ``PostgresStoreError`` with code `invalidLoad` when a loaded row references a
    ///   missing row, whatever the sources throw; nothing is written then.
    public func bulkLoad(_ loads: [BulkLoad]) async throws -> (revision: Int64, rows: [String: Int]) {
        for load in loads where schema.type(named: load.type) == nil { throw SyncStoreError.unknownType(load.type) }
        return try await withTransaction { [self] connection in
            let tables = try await lockServed(on: connection).tables
            let revision = try await query("SELECT seedsync._bulk()", on: connection)[0].decode(Int64.self)
            var counts: [String: Int] = [:]
            for load in loads {
                counts[load.type, default: 0] += try await copy(load, on: connection)
            }
            for type in Set(loads.map(\.type)) { try await checkReferences(of: tables[type]!, on: connection) }
            return (revision, counts)
        }
    }

    private func copy(_ load: BulkLoad, on connection: PostgresConnection) async throws -> Int {
        let table = try await currentServed(on: connection).table(load.type)
        let type = table.type
        try await connection.rows(
            PostgresQuery(unsafeSQL: "CREATE TEMP TABLE seedsync_load (LIKE \(table.table)) ON COMMIT DROP"),
            logger: logger)
        var rows = try load.makeRows()
        var count = 0
        try await connection.copyFrom(
            table: "seedsync_load", columns: [type.primaryKey.name] + type.fields.map(\.name), logger: logger
        ) { writer in
            var buffer = ByteBuffer()
            buffer.reserveCapacity(1 << 20)
            while let row = try rows.nextRow() {
                CopyText.append(row, of: type, to: &buffer)
                count += 1
                if buffer.readableBytes >= 1 << 20 {
                    try await writer.write(buffer)
                    buffer.clear()
                }
            }
            if buffer.readableBytes > 0 { try await writer.write(buffer) }
        }
        if let outside = try await PostgresSyncStore.keyOutsideRange(
            of: table, in: "seedsync_load", on: connection, logger: logger)
        {
            throw PostgresStoreError(
                .invalidLoad, "\(ChangeSetError.keyOutOfRange(type.name, outside)); nothing was loaded")
        }
        try await connection.rows(PostgresQuery(unsafeSQL: table.upsert(from: "seedsync_load")), logger: logger)
        try await connection.rows("DROP TABLE seedsync_load", logger: logger)
        return count
    }

    /// Fails when a row of `table` references a missing row.
    private func checkReferences(of table: PostgresTableSQL, on connection: PostgresConnection) async throws {
        for field in table.type.fields {
            guard let target = field.references else { continue }
            if let row = try await query(table.dangling(through: field, target: tables[target]!), on: connection).first
            {
                let (key, reference) = try row.decode((String, String).self)
                throw PostgresStoreError(
                    .invalidLoad,
                    "\(table.type.name)[\(key)].\(field.name) references \(target)[\(reference)], which does not exist; nothing was loaded"
                )
            }
        }
    }

    /// Drops change sets older than the newest `keep` revisions and raises `minRevision` to match.
    ///
    /// - Returns: how many change sets were dropped and the new `minRevision`.
    public func compact(keepingRevisions keep: Int64) async throws -> Compaction {
        precondition(keep >= 0, "keep must not be negative")
        // The chain reaches every revision first, so the value at the new minRevision is the
        // log's, not a new start (clients there keep theirs).
        try await HistoryLedger(self).extend(through: try await revisions().revision)
        let compaction = try await compactLog(keepingRevisions: keep)
        chainCache.remove(below: compaction.minRevision)
        return compaction
    }

    private func compactLog(keepingRevisions keep: Int64) async throws -> Compaction {
        try await withTransaction { [self] connection in
            let revision = try await query(
                "SELECT revision FROM seedsync._state WHERE id = 1 FOR UPDATE", on: connection)[0].decode(Int64.self)
            let pinned = try await PostgresSeedRecords.oldestPinned(on: connection, store: self)
            let wanted = revision - keep
            var binds = PostgresBindings()
            binds.append(min(wanted, pinned?.revision ?? wanted))
            let state = try await query(
                "UPDATE seedsync._state SET min_revision = greatest(min_revision, $1) WHERE id = 1 RETURNING min_revision",
                binds, on: connection
            )
            let minRevision = try state[0].decode(Int64.self)
            var removal = PostgresBindings()
            removal.append(minRevision)
            let removed = try await query(
                "WITH gone AS (DELETE FROM seedsync._changes WHERE revision <= $1 RETURNING revision) SELECT count(DISTINCT revision) FROM gone",
                removal, on: connection
            )
            _ = try await query("DELETE FROM seedsync._chain WHERE revision < $1", removal, on: connection)
            return Compaction(
                removedChangeSets: Int(try removed[0].decode(Int64.self)), minRevision: minRevision,
                pinnedBy: pinned.flatMap { $0.revision < wanted ? $0 : nil })
        }
    }
}

/// Rows in `COPY … FROM STDIN` text format: tab-separated, `\N` for null, backslash escapes.
enum CopyText {
    static func append(_ row: RowValues, of type: EntityType, to buffer: inout ByteBuffer) {
        appendKey(row.key, to: &buffer)
        for (field, value) in zip(type.fields, row.values) {
            buffer.writeInteger(UInt8(ascii: "\t"))
            append(value, as: field.type, to: &buffer)
        }
        buffer.writeInteger(UInt8(ascii: "\n"))
    }

    private static func appendKey(_ key: JSONValue, to buffer: inout ByteBuffer) {
        append(key, as: .text, to: &buffer)
    }

    private static func append(_ value: JSONValue, as type: FieldType, to buffer: inout ByteBuffer) {
        switch (value, type) {
        case (.null, _): buffer.writeString("\\N")
        case (_, .json): appendEscaped(String(decoding: JSONWriter.bytes(of: value), as: UTF8.self), to: &buffer)
        case (.array, _), (.object, _): buffer.writeString("\\N")
        case (.bool(let flag), _): buffer.writeString(flag ? "t" : "f")
        case (.int(let number), .real): buffer.writeString("\(Double(number))")
        case (.int(let number), _): buffer.writeString(String(number))
        case (.double(let number), _): buffer.writeString("\(number)")
        case (.string(let text), .blob):
            buffer.writeString("\\\\x")
            for byte in Data(base64Encoded: text) ?? Data() {
                buffer.writeInteger(hexDigits[Int(byte >> 4)])
                buffer.writeInteger(hexDigits[Int(byte & 0x0F)])
            }
        case (.string(let text), _): appendEscaped(text, to: &buffer)
        }
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    private static func appendEscaped(_ text: String, to buffer: inout ByteBuffer) {
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\\"): buffer.writeString("\\\\")
            case UInt8(ascii: "\t"): buffer.writeString("\\t")
            case UInt8(ascii: "\n"): buffer.writeString("\\n")
            case UInt8(ascii: "\r"): buffer.writeString("\\r")
            default: buffer.writeInteger(byte)
            }
        }
    }
}
