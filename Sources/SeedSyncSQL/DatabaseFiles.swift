import Foundation
import GRDB

/// The files of one SQLite database SeedSync writes, every name spelled here: the database, the
/// companions SQLite keeps beside it (`-wal`, `-shm`, `-journal`), and the files an importer keeps
/// beside an app's database while it works on it (`.lock`, `.installing`, `.snapshot`, `.migration`).
/// A seed's own files (`.gz`, the manifest, a build's `.partial` and `.new`) are `SeedFiles`.
///
/// ```swift
/// let files = DatabaseFiles("app/events.sqlite")
/// files.lock         // app/events.sqlite.lock
/// files.remove()     // app/events.sqlite and its -wal, -shm and -journal
/// ```
package struct DatabaseFiles: Sendable, Hashable {
    /// The database file.
    package let path: String

    package init(_ path: String) { self.path = path }

    /// The write-ahead log, `-wal`.
    package var wal: String { path + "-wal" }
    /// The WAL's shared-memory index, `-shm`.
    package var shm: String { path + "-shm" }
    /// The rollback journal, `-journal`.
    package var journal: String { path + "-journal" }
    /// The files SQLite keeps beside the database: `-wal`, `-shm`, `-journal`.
    package var companions: [String] { [wal, shm, journal] }

    /// The importer's lock, `.lock`: one importer of the database at a time.
    package var lock: String { path + ".lock" }
    /// A seed being installed, `.installing`, renamed into place when checked.
    package var installing: DatabaseFiles { DatabaseFiles(path + ".installing") }
    /// A snapshot downloaded after 410, `.snapshot` (its build's files are `SeedFiles` of it).
    package var snapshot: DatabaseFiles { DatabaseFiles(path + ".snapshot") }
    /// The folder a published seed is downloaded into, `.seed` (``SeedImporter/Configuration/seedURL``):
    /// the seed file and its manifest, kept until the seed is installed, so a cut download resumes.
    package var download: String { path + ".seed" }
    /// A migration's staging database, `.migration`.
    package var migration: DatabaseFiles { DatabaseFiles(path + ".migration") }

    /// Removes the database and its companions, ignoring the ones that are not there.
    package func remove() {
        try? FileManager.default.removeItem(atPath: path)
        removeCompanions()
    }

    /// Removes the companions of the database.
    ///
    /// Needed before a new file takes that path: SQLite would replay an old file's journal onto it.
    package func removeCompanions() {
        for companion in companions { try? FileManager.default.removeItem(atPath: companion) }
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
