import Crypto
package import GRDB
import GRDBSQLite
package import SeedSyncModel
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
        let metadataRows =
            try Int64.fetchOne(
                db, sql: "SELECT count(*) FROM \(SeedFormat.metadataTable) WHERE key <> ?", arguments: [key]) ?? 0
        stream.integer(metadataRows)
        try stream.rows(
            db, sql: "SELECT key, value FROM \(SeedFormat.metadataTable) WHERE key <> ? ORDER BY key", arguments: [key])
        for type in schema.types {
            let table = TableSQL(type: type)
            stream.text(type.name)
            stream.integer(try Int64.fetchOne(db, sql: "SELECT count(*) FROM \(table.table)") ?? 0)
            try stream.rows(db, sql: "SELECT \(table.columns) FROM \(table.table) ORDER BY \(table.key)")
        }
        return stream.finalize()
    }

    /// The hashed stream, written into a fixed buffer that SHA-256 sees in 64 KiB blocks: values
    /// are stored with plain byte stores, never appended one array element at a time.
    private struct Stream: ~Copyable {
        private var hash = SHA256()
        private let buffer: UnsafeMutableRawBufferPointer
        private var count = 0
        private static let blockSize = 1 << 16

        init() {
            buffer = .allocate(byteCount: Self.blockSize + 16, alignment: 8)
        }

        deinit { buffer.deallocate() }

        mutating func rows(_ db: Database, sql: String, arguments: StatementArguments = []) throws {
            let statement = try db.makeStatement(sql: sql)
            try statement.setArguments(arguments)
            let handle = statement.sqliteStatement
            let columns = sqlite3_column_count(handle)
            defer { sqlite3_reset(handle) }
            while true {
                let code = sqlite3_step(handle)
                guard code == SQLITE_ROW else {
                    guard code == SQLITE_DONE else { throw DatabaseError(failedStep: handle, sql: sql) }
                    return
                }
                for column in 0..<columns { value(handle, column) }
            }
        }

        private mutating func value(_ handle: SQLiteStatement, _ column: Int32) {
            switch sqlite3_column_type(handle, column) {
            case SQLITE_INTEGER: integer(sqlite3_column_int64(handle, column))
            case SQLITE_FLOAT: tagged(2, sqlite3_column_double(handle, column).bitPattern)
            case SQLITE_TEXT:
                bytes(
                    3, sqlite3_column_text(handle, column).map(UnsafeRawPointer.init),
                    sqlite3_column_bytes(handle, column))
            case SQLITE_BLOB: bytes(4, sqlite3_column_blob(handle, column), sqlite3_column_bytes(handle, column))
            default: tag(0)
            }
        }

        mutating func integer(_ number: Int64) { tagged(1, UInt64(bitPattern: number)) }

        mutating func text(_ text: String) {
            var text = text
            text.withUTF8 { bytes(3, UnsafeRawPointer($0.baseAddress), Int32($0.count)) }
        }

        /// A tag byte alone (NULL).
        private mutating func tag(_ tag: UInt8) {
            if count + 1 > Self.blockSize { flush() }
            buffer[count] = tag
            count += 1
        }

        /// A tag byte and a big-endian 64-bit word.
        private mutating func tagged(_ tag: UInt8, _ word: UInt64) {
            if count + 9 > Self.blockSize { flush() }
            buffer[count] = tag
            buffer.storeBytes(of: word.bigEndian, toByteOffset: count + 1, as: UInt64.self)
            count += 9
        }

        /// A tag byte, the length as a big-endian 64-bit word, then the bytes.
        private mutating func bytes(_ tag: UInt8, _ pointer: UnsafeRawPointer?, _ length: Int32) {
            tagged(tag, UInt64(length))
            guard let pointer, length > 0 else { return }
            let bytes = UnsafeRawBufferPointer(start: pointer, count: Int(length))
            if count + bytes.count > Self.blockSize { flush() }
            if bytes.count > Self.blockSize {
                hash.update(bufferPointer: bytes)
            } else {
                UnsafeMutableRawBufferPointer(rebasing: buffer[count...]).copyMemory(from: bytes)
                count += bytes.count
            }
        }

        private mutating func flush() {
            hash.update(bufferPointer: UnsafeRawBufferPointer(rebasing: buffer[..<count]))
            count = 0
        }

        consuming func finalize() -> String {
            flush()
            return hash.finalize().lowercaseHex
        }
    }
}
