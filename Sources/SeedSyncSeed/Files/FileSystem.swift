import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The file operations that make a finished file appear atomically: sync, rename, sync the folder.
package enum FileSystem {
    /// Flushes the file's data to disk.
    package static func sync(_ path: String) throws {
        guard let handle = FileHandle(forUpdatingAtPath: path) else { throw SeedError("cannot open \(path) to sync it") }
        defer { try? handle.close() }
        try handle.synchronize()
    }

    /// Renames `source` over `destination` (atomic on POSIX file systems).
    package static func rename(_ source: String, to destination: String) throws {
        guard Foundation.rename(source, destination) == 0 else {
            throw SeedError("cannot rename \(source) to \(destination): \(String(cString: strerror(errno)))")
        }
    }

    /// Flushes the folder holding `path`, so renames in it survive a power loss.
    package static func syncDirectory(of path: String) {
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        let descriptor = open(directory, O_RDONLY)
        guard descriptor >= 0 else { return }
        _ = fsync(descriptor)
        close(descriptor)
    }
}
