import Foundation

/// The fields of the 100-byte SQLite database header (https://sqlite.org/fileformat.html) that
/// seeds are checked by, read without SQLite; `nil` when the file does not begin with one.
struct SQLiteHeader {
    let pageSize: Int
    let pageCount: UInt32
    /// File format write and read versions both 1: rollback journal, not WAL.
    let isRollbackJournal: Bool
    /// Text encoding 1.
    let isUTF8: Bool
    /// `PRAGMA application_id`, big-endian at offset 68.
    let applicationID: Int32

    init?(path: String) {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        guard let data = try? handle.read(upToCount: 100), data.count == 100 else { return nil }
        let bytes = [UInt8](data)
        guard bytes.starts(with: Array("SQLite format 3\0".utf8)) else { return nil }
        func uint32(at offset: Int) -> UInt32 { bytes[offset..<offset + 4].reduce(0) { $0 << 8 | UInt32($1) } }
        let rawPageSize = Int(bytes[16]) << 8 | Int(bytes[17])
        pageSize = rawPageSize == 1 ? 65536 : rawPageSize
        pageCount = uint32(at: 28)
        isRollbackJournal = bytes[18] == 1 && bytes[19] == 1
        isUTF8 = uint32(at: 56) == 1
        applicationID = Int32(bitPattern: uint32(at: 68))
    }
}
