import Foundation
package import GRDB
import GRDBSQLite
package import SeedSyncModel

/// Moves values between wire form and a prepared statement through SQLite's C API, without
/// GRDB's `StatementArguments` or rows: the hot loops of snapshot pages (server) and of
/// inserting them (seed-build), where those cost more than SQLite itself.
///
/// Values go through the one mapping of ``ValueMapping``, one `DatabaseValue` at a time (a
/// value, not an allocation); TEXT columns are written to JSON straight from SQLite's buffer.
package enum StatementValues {
    /// Runs `statement` (``TableSQL/insert`` or ``TableSQL/upsert``) once for `row`, binding key,
    /// fields and revision in order.
    ///
    /// - Throws: `DatabaseError` as GRDB would (`SQLITE_CONSTRAINT` for a repeated key, say).
    package static func execute(_ statement: Statement, row: RowValues, of type: EntityType, revision: Int64) throws {
        let handle = statement.sqliteStatement
        sqlite3_reset(handle)
        bind(ValueMapping.databaseValue(key: row.key), at: 1, to: handle)
        var index: Int32 = 2
        for (field, value) in zip(type.fields, row.values) {
            bind(ValueMapping.databaseValue(value, as: field.type), at: index, to: handle)
            index += 1
        }
        sqlite3_bind_int64(handle, index, revision)
        try step(statement)
    }

    /// Runs `statement` (``TableSQL/insert``) once for the row of `cells` at `positions` (key,
    /// fields of `types`, revision), checked as a snapshot row (``FieldType/normalize(_:)`` takes
    /// each value as it is, but a blob's base64).
    ///
    /// Strings of `text` and `timestamp` fields and text keys are bound from the cells' bytes;
    /// every other value goes through ``ValueMapping``, as in ``execute(_:row:of:revision:)``.
    ///
    /// - Throws: `DatabaseError` as GRDB would (`SQLITE_CONSTRAINT` for a repeated key, say).
    package static func execute(
        _ statement: Statement, row positions: Range<Int>, of cells: SnapshotCells, types: [FieldType]
    ) throws {
        let handle = statement.sqliteStatement
        sqlite3_reset(handle)
        bind(cells[positions.lowerBound], of: cells, as: nil, at: 1, to: handle)
        for (offset, type) in types.enumerated() {
            bind(cells[positions.lowerBound + 1 + offset], of: cells, as: type, at: Int32(offset + 2), to: handle)
        }
        sqlite3_bind_int64(handle, Int32(types.count + 2), cells[positions.upperBound - 1].int)
        defer { sqlite3_clear_bindings(handle) }
        try step(statement)
    }

    /// Binds a cell as a value of `type` (`nil` for a key).
    private static func bind(
        _ cell: SnapshotCells.Cell, of cells: SnapshotCells, as type: FieldType?, at index: Int32,
        to handle: SQLiteStatement
    ) {
        switch (cell.kind, type) {
        case (.string, nil), (.string, .text?), (.string, .timestamp?):
            // Not copied by SQLite: the cells outlive the step, and the bindings are cleared after it.
            cells.withBytes(of: cell) { bind(utf8: $0, at: index, to: handle, copied: false) }
        case (_, let type?): bind(ValueMapping.databaseValue(cells.value(of: cell), as: type), at: index, to: handle)
        case (_, nil): bind(ValueMapping.databaseValue(key: cells.value(of: cell)), at: index, to: handle)
        }
    }

    /// Steps `statement` once, to its end, and resets it.
    private static func step(_ statement: Statement) throws {
        let handle = statement.sqliteStatement
        let code = sqlite3_step(handle)
        guard code == SQLITE_DONE else {
            let error = DatabaseError(failedStep: handle, sql: statement.sql)
            sqlite3_reset(handle)
            throw error
        }
        sqlite3_reset(handle)
    }

    /// An empty blob is bound as a zero-length blob, never through a null pointer (which is NULL).
    private static func bind(_ value: DatabaseValue, at index: Int32, to handle: SQLiteStatement) {
        switch value.storage {
        case .null: sqlite3_bind_null(handle, index)
        case .int64(let number): sqlite3_bind_int64(handle, index, number)
        case .double(let number): sqlite3_bind_double(handle, index, number)
        case .string(let text): bind(text: text, at: index, to: handle)
        case .blob(let data):
            _ = data.withUnsafeBytes { bytes in
                guard let start = bytes.baseAddress, !bytes.isEmpty else {
                    return sqlite3_bind_zeroblob(handle, index, 0)
                }
                return sqlite3_bind_blob(handle, index, start, Int32(bytes.count), transient)
            }
        }
    }

    private static func bind(text: String, at index: Int32, to handle: SQLiteStatement) {
        var text = text
        text.withUTF8 { bind(utf8: $0, at: index, to: handle) }
    }

    /// Binds text; unless `copied`, SQLite reads `bytes` where they are until the binding changes.
    private static func bind(
        utf8 bytes: UnsafeBufferPointer<UInt8>, at index: Int32, to handle: SQLiteStatement, copied: Bool = true
    ) {
        guard let start = bytes.baseAddress, !bytes.isEmpty else {
            _ = sqlite3_bind_text(handle, index, "", 0, transient)
            return
        }
        _ = start.withMemoryRebound(to: CChar.self, capacity: bytes.count) {
            sqlite3_bind_text(handle, index, $0, Int32(bytes.count), copied ? transient : nil)
        }
    }

    /// SQLite copies the value before the call returns.
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    /// Writes column `index` of the current row of `statement` as a wire value of `type` (`nil`
    /// for a key or the revision column).
    package static func write(
        column index: Int32, of statement: Statement, as type: FieldType?, to writer: inout JSONWriter
    ) {
        let handle = statement.sqliteStatement
        // The storage class is read once: integers (most cells of most pages) and TEXT are written
        // without a `DatabaseValue`, through the same mapping.
        switch sqlite3_column_type(handle, index) {
        case SQLITE_INTEGER:
            writer.value(ValueMapping.jsonValue(integer: sqlite3_column_int64(handle, index), as: type))
        case SQLITE_TEXT where type != .json:
            // TEXT is a string whatever the type: written without making a `String`.
            let count = Int(sqlite3_column_bytes(handle, index))
            let bytes = sqlite3_column_text(handle, index).map { UnsafeBufferPointer(start: $0, count: count) }
            writer.string(utf8: bytes ?? UnsafeBufferPointer(start: nil, count: 0))
        default:
            writer.value(ValueMapping.jsonValue(DatabaseValue(sqliteStatement: handle, index: index), as: type))
        }
    }

    /// The current row of `statement` (``TableSQL/columns`` order: key, fields, revision) as a
    /// snapshot page row, `[key, field…, revision]`.
    package static func writeRow(of type: EntityType, from statement: Statement, to writer: inout JSONWriter) {
        writer.beginArray()
        write(column: 0, of: statement, as: nil, to: &writer)
        for (index, field) in type.fields.enumerated() {
            write(column: Int32(index + 1), of: statement, as: field.type, to: &writer)
        }
        write(column: Int32(type.fields.count + 1), of: statement, as: nil, to: &writer)
        writer.endArray()
    }

    /// Column `index` of the current row of `statement` as an integer (0 for NULL).
    package static func integer(column index: Int32, of statement: Statement) -> Int64 {
        sqlite3_column_int64(statement.sqliteStatement, index)
    }

    /// The bytes of column `index` of the current row of `statement` (a BLOB or TEXT; none for
    /// NULL), copied once.
    package static func bytes(column index: Int32, of statement: Statement) -> [UInt8] {
        let handle = statement.sqliteStatement
        guard let start = sqlite3_column_blob(handle, index) else { return [] }
        return Array(UnsafeRawBufferPointer(start: start, count: Int(sqlite3_column_bytes(handle, index))))
    }

    /// Column `index` of the current row of `statement` as a key.
    package static func key(column index: Int32, of statement: Statement) -> JSONValue {
        ValueMapping.jsonKey(DatabaseValue(sqliteStatement: statement.sqliteStatement, index: index))
    }
}

extension DatabaseError {
    /// The error of a `sqlite3_step` that failed on `statement`, with the connection's extended
    /// code and message. Call it before `sqlite3_reset`, which replaces both.
    package init(failedStep statement: SQLiteStatement, sql: String) {
        let connection = sqlite3_db_handle(statement)
        self.init(
            resultCode: ResultCode(rawValue: sqlite3_extended_errcode(connection)),
            message: String(cString: sqlite3_errmsg(connection)), sql: sql
        )
    }
}
