import Foundation
package import GRDB
import GRDBSQLite

extension SeedError {
    /// The error of a SQLite operation, classified by SQLite's result code.
    ///
    /// The code decides, not SQLite's message: after an I/O error the message can be stale
    /// (another statement's text). A full volume is ``Code/diskFull``; I/O errors, read-only files
    /// and files SQLite cannot open are ``Code/fileSystem`` and say to check the volume; damage is
    /// ``Code/damaged``; only a file that is not a database at all is ``Code/notASeed``.
    ///
    /// - Parameters:
    ///   - action: what was being done, finishing "cannot …": `write /x/seed.sqlite.partial`.
    ///   - file: the database written, when writing: an I/O error with the file (or its journal)
    ///     at the process's file-size limit is ``Code/fileSizeLimit`` (SQLite reports `EFBIG` as
    ///     a plain I/O error).
    package static func database(_ error: DatabaseError, _ action: String, file: String? = nil) -> Self {
        let code = error.extendedResultCode
        let name = "SQLite \(String(cString: sqlite3_errstr(code.rawValue)))"
        switch error.resultCode {
        case .SQLITE_FULL:
            return system(ENOSPC, action)
        case .SQLITE_IOERR where file.map(FileSystem.reachesFileSizeLimit) == true:
            return system(EFBIG, action)
        case .SQLITE_IOERR:
            return Self(
                .fileSystem,
                "cannot \(action): \(name) (result code \(code.rawValue)); check the volume (free space, the file-size limit ulimit -f, its health) and run again"
            )
        case .SQLITE_CANTOPEN, .SQLITE_PERM, .SQLITE_READONLY, .SQLITE_AUTH:
            return Self(
                .fileSystem,
                "cannot \(action): \(name); check that the file and its folder exist and are writable, and that the volume has free space"
            )
        case .SQLITE_CORRUPT:
            return Self(.damaged, "cannot \(action): the file is damaged (\(name))")
        case .SQLITE_NOTADB:
            return Self(.notASeed, "cannot \(action): the file is not a SQLite database")
        case .SQLITE_BUSY, .SQLITE_LOCKED:
            return Self(.busy, "cannot \(action): another process has the file locked; wait for it and run again")
        case .SQLITE_CONSTRAINT, .SQLITE_MISMATCH, .SQLITE_TOOBIG, .SQLITE_RANGE:
            return Self(.invalidData, "cannot \(action): \(error.message ?? name)")
        default:
            return Self(.sqlite, "cannot \(action): \(error.message ?? name)")
        }
    }
}
