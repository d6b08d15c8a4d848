import Crypto
import GRDB
import GRDBSQLite
import SeedSyncModel
import SeedSyncSQL

/// The SHA-256 of a seed's content, which the seed carries in its metadata (`content_sha256`), so
/// that a seed proves it is intact without its manifest.
///
/// The manifest's SHA-256 covers the file's bytes, but the manifest can be left behind; SQLite's
/// `quick_check` sees broken pages but not a changed character inside a text value. The content
/// digest covers every value a reader can see, whatever the file's page layout, and is checked by
/// `seed-verify` and by the importer when no manifest comes with the seed.
///
/// The stream that is hashed (SEED-FORMAT.md §3.4): the number of metadata rows other than
/// `content_sha256`, then each such row's key and value in key order; then, for each type in schema
/// order, its name, its row count, and every value of every row (key, fields, revision) in key
/// order. Each value is a tag byte and its bytes: `0` NULL; `1` INTEGER, 8 bytes big-endian;
/// `2` REAL, its IEEE 754 bits as 8 bytes big-endian; `3` TEXT and `4` BLOB, the length as
/// 8 bytes big-endian, then the bytes (UTF-8 for text).
///
/// ```swift
/// let digest = try ContentDigest.compute(db, schema: metadata.schema)  // 64 hex digits
/// ```
package enum ContentDigest {
    /// Hashes the content of the seed-format database `db`, whose types are `schema`'s.
    package static func compute(_ db: Database, schema: DatasetSchema) throws -> String {
        var stream = Stream()
        let key = SeedMetadata.Key.contentSHA256.rawValue
        let metadataRows = try Int64.fetchOne(db, sql: "SELECT count(*) FROM \(SeedFormat.metadataTable) WHERE key <> ?", arguments: [key]) ?? 0
        stream.integer(metadataRows)
        try stream.rows(db, sql: "SELECT key, value FROM \(SeedFormat.metadataTable) WHERE key <> ? ORDER BY key", arguments: [key])
        for type in schema.types {
            let table = TableSQL(type: type)
            stream.text(type.name)
            stream.integer(try Int64.fetchOne(db, sql: "SELECT count(*) FROM \(table.table)") ?? 0)
            try stream.rows(db, sql: "SELECT \(table.columns) FROM \(table.table) ORDER BY \(table.key)")
        }
        return stream.finalize()
    }

    /// The hashed stream, buffered so that SHA-256 sees large blocks rather than single values.
    private struct Stream {
        private var hash = SHA256()
        private var buffer: [UInt8] = []
        private static let blockSize = 1 << 16

        init() {
            buffer.reserveCapacity(Self.blockSize + 64)
        }

        mutating func rows(_ db: Database, sql: String, arguments: StatementArguments = []) throws {
            let statement = try db.makeStatement(sql: sql)
            try statement.setArguments(arguments)
            let handle = statement.sqliteStatement
            let columns = sqlite3_column_count(handle)
            defer { sqlite3_reset(handle) }
            while true {
                let code = sqlite3_step(handle)
                guard code == SQLITE_ROW else {
                    guard code == SQLITE_DONE else {
                        let connection = sqlite3_db_handle(handle)
                        throw DatabaseError(resultCode: ResultCode(rawValue: sqlite3_extended_errcode(connection)), message: String(cString: sqlite3_errmsg(connection)), sql: sql)
                    }
                    return
                }
                for column in 0..<columns { value(handle, column) }
            }
        }

        private mutating func value(_ handle: SQLiteStatement, _ column: Int32) {
            switch sqlite3_column_type(handle, column) {
            case SQLITE_INTEGER: integer(sqlite3_column_int64(handle, column))
            case SQLITE_FLOAT: tagged(2, UInt64(sqlite3_column_double(handle, column).bitPattern))
            case SQLITE_TEXT: bytes(3, sqlite3_column_text(handle, column).map(UnsafeRawPointer.init), sqlite3_column_bytes(handle, column))
            case SQLITE_BLOB: bytes(4, sqlite3_column_blob(handle, column), sqlite3_column_bytes(handle, column))
            default: append(0)
            }
        }

        mutating func integer(_ number: Int64) { tagged(1, UInt64(bitPattern: number)) }

        mutating func text(_ text: String) {
            var text = text
            text.withUTF8 { bytes(3, UnsafeRawPointer($0.baseAddress), Int32($0.count)) }
        }

        private mutating func tagged(_ tag: UInt8, _ word: UInt64) {
            append(tag)
            withUnsafeBytes(of: word.bigEndian) { buffer.append(contentsOf: $0) }
        }

        private mutating func bytes(_ tag: UInt8, _ pointer: UnsafeRawPointer?, _ count: Int32) {
            tagged(tag, UInt64(count))
            guard let pointer, count > 0 else { return }
            let bytes = UnsafeRawBufferPointer(start: pointer, count: Int(count))
            if buffer.count + bytes.count > Self.blockSize { flush() }
            if bytes.count > Self.blockSize {
                hash.update(bufferPointer: bytes)
            } else {
                buffer.append(contentsOf: bytes)
            }
        }

        private mutating func append(_ byte: UInt8) {
            if buffer.count >= Self.blockSize { flush() }
            buffer.append(byte)
        }

        private mutating func flush() {
            buffer.withUnsafeBytes { hash.update(bufferPointer: $0) }
            buffer.removeAll(keepingCapacity: true)
        }

        mutating func finalize() -> String {
            flush()
            return hash.finalize().hexString
        }
    }
}
