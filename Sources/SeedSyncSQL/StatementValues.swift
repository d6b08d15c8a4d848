import Foundation
package import GRDB
import GRDBSQLite
package import SeedSyncModel

/// Moves values between wire form and a prepared statement through SQLite's C API, without
/// boxing each one in a `DatabaseValue`: the hot loops of snapshot pages (server) and of
/// inserting them (seed-build), where that boxing cost more than SQLite itself.
///
/// Values follow the same mapping as ``ValueMapping``: booleans are 0 and 1, reals are REAL even
/// when they arrive as integers, blobs travel as base64, timestamps as text.
package enum StatementValues {
    /// Runs `statement` (``TableSQL/insert`` or ``TableSQL/upsert``) once for `row`, binding key,
    /// fields and revision in order.
    ///
    /// - Throws: `DatabaseError` as GRDB would (`SQLITE_CONSTRAINT` for a repeated key, say).
    package static func execute(_ statement: Statement, row: RowValues, of type: EntityType, revision: Int64) throws {
        let handle = statement.sqliteStatement
        sqlite3_reset(handle)
        bind(key: row.key, at: 1, to: handle)
        var index: Int32 = 2
        for (field, value) in zip(type.fields, row.values) {
            bind(value, as: field.type, at: index, to: handle)
            index += 1
        }
        sqlite3_bind_int64(handle, index, revision)
        let code = sqlite3_step(handle)
        guard code == SQLITE_DONE else {
            let error = DatabaseError(failedStep: handle, sql: statement.sql)
            sqlite3_reset(handle)
            throw error
        }
        sqlite3_reset(handle)
    }

    private static func bind(key: JSONValue, at index: Int32, to handle: SQLiteStatement) {
        switch key {
        case .int(let number): sqlite3_bind_int64(handle, index, number)
        case .string(let text): bind(text: text, at: index, to: handle)
        default: sqlite3_bind_null(handle, index)
        }
    }

    private static func bind(_ value: JSONValue, as type: FieldType, at index: Int32, to handle: SQLiteStatement) {
        switch (value, type) {
        case (.bool(let flag), _): sqlite3_bind_int64(handle, index, flag ? 1 : 0)
        case (.int(let number), .real): sqlite3_bind_double(handle, index, Double(number))
        case (.int(let number), _): sqlite3_bind_int64(handle, index, number)
        case (.double(let number), _): sqlite3_bind_double(handle, index, number)
        case (.string(let text), .blob):
            let data = Data(base64Encoded: text) ?? Data()
            _ = data.withUnsafeBytes { bytes in
                guard let start = bytes.baseAddress, !bytes.isEmpty else {
                    return sqlite3_bind_zeroblob(handle, index, 0)
                }
                return sqlite3_bind_blob(handle, index, start, Int32(bytes.count), transient)
            }
        case (.string(let text), _): bind(text: text, at: index, to: handle)
        case (.null, _), (.array, _), (.object, _): sqlite3_bind_null(handle, index)
        }
    }

    private static func bind(text: String, at index: Int32, to handle: SQLiteStatement) {
        var text = text
        text.withUTF8 { bytes in
            guard let start = bytes.baseAddress, !bytes.isEmpty else {
                _ = sqlite3_bind_text(handle, index, "", 0, transient)
                return
            }
            _ = start.withMemoryRebound(to: CChar.self, capacity: bytes.count) {
                sqlite3_bind_text(handle, index, $0, Int32(bytes.count), transient)
            }
        }
    }

    /// SQLite copies the value before the call returns.
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    /// Writes column `index` of the current row of `statement` as a wire value of `type` (`nil`
    /// for a key or the revision column: integers and text as they are).
    package static func write(
        column index: Int32, of statement: Statement, as type: FieldType?, to writer: inout JSONWriter
    ) {
        let handle = statement.sqliteStatement
        switch sqlite3_column_type(handle, index) {
        case SQLITE_INTEGER:
            let number = sqlite3_column_int64(handle, index)
            switch type {
            case .boolean: writer.value(.bool(number != 0))
            case .real: writer.value(.double(Double(number)))
            default: writer.value(.int(number))
            }
        case SQLITE_FLOAT: writer.value(.double(sqlite3_column_double(handle, index)))
        case SQLITE_TEXT:
            let count = Int(sqlite3_column_bytes(handle, index))
            let bytes = sqlite3_column_text(handle, index).map { UnsafeBufferPointer(start: $0, count: count) }
            writer.string(utf8: bytes ?? UnsafeBufferPointer(start: nil, count: 0))
        case SQLITE_BLOB:
            let count = Int(sqlite3_column_bytes(handle, index))
            let data = sqlite3_column_blob(handle, index).map { Data(bytes: $0, count: count) } ?? Data()
            writer.value(.string(data.base64EncodedString()))
        default: writer.value(.null)
        }
    }

    /// Column `index` of the current row of `statement` as a key.
    package static func key(column index: Int32, of statement: Statement) -> JSONValue {
        let handle = statement.sqliteStatement
        switch sqlite3_column_type(handle, index) {
        case SQLITE_INTEGER: return .int(sqlite3_column_int64(handle, index))
        case SQLITE_TEXT: return .string(String(cString: sqlite3_column_text(handle, index)))
        default: return .null
        }
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
