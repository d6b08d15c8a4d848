import Foundation
import GRDB

/// File-level operations shared by every SQLite file SeedSync writes.
package enum SQLiteFiles {
    /// Removes a database file and its `-wal`, `-shm` and `-journal` files, ignoring the ones that are not there.
    package static func remove(at path: String) {
        try? FileManager.default.removeItem(atPath: path)
        removeJournals(of: path)
    }

    /// Removes the `-wal`, `-shm` and `-journal` files of the database at `path`.
    ///
    /// Needed before a new file takes that path: SQLite would replay an old file's journal onto it.
    package static func removeJournals(of path: String) {
        for suffix in ["-wal", "-shm", "-journal"] {
            try? FileManager.default.removeItem(atPath: path + suffix)
        }
    }
}

extension DatabaseError {
    /// Whether the volume failed the write (full, or an I/O error), not the statement.
    package var isVolumeFailure: Bool {
        resultCode == .SQLITE_FULL || resultCode == .SQLITE_IOERR
    }

    /// SQLite's message, or the result code when there is none: for error texts people read.
    package var reason: String {
        message ?? "SQLite error \(resultCode.rawValue)"
    }
}

extension Database {
    /// Runs `wal_checkpoint(TRUNCATE)` and tells whether every frame of the WAL reached the main file.
    ///
    /// Needed before a file is renamed or copied as a whole: a frame left in the WAL is data left behind.
    package func checkpointCompletely() throws -> Bool {
        let frames = try checkpoint(.truncate)
        return frames.walFrameCount == frames.checkpointedFrameCount
    }
}
