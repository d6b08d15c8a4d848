import Foundation
import SeedSyncSQL
import SeedSyncSeed

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One importer at a time per database: an exclusive `flock` on `DATABASE.lock`.
///
/// The lock belongs to the open file, so the system releases it when the process ends, however it
/// ends; a lock file left behind by a killed importer is free. A second importer polls for the lock
/// until its timeout, then gives up with ``ImportError/Code/locked``.
package final class ImportLock {
    package let path: String
    private let descriptor: Int32

    private init(path: String, descriptor: Int32) {
        self.path = path
        self.descriptor = descriptor
    }

    /// Takes the lock of `database`, waiting at most `timeout` seconds for another importer to release it.
    package static func acquire(for database: String, timeout: Double) async throws -> ImportLock {
        let path = DatabaseFiles(database).lock
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw ImportError(SeedError.system(errno, "create the lock file \(path)"), otherwise: .invalidDatabase)
        }
        let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            let code = errno
            guard code == EWOULDBLOCK || code == EINTR else {
                close(descriptor)
                throw ImportError(.invalidDatabase, "cannot lock \(path): \(String(cString: strerror(code)))")
            }
            guard ContinuousClock.now < deadline else {
                close(descriptor)
                throw ImportError(
                    .locked,
                    "another importer is working on \(database) (it holds \(path)); gave up after waiting \(timeout) s")
            }
            do {
                try await Task.sleep(for: .milliseconds(50))
            } catch {
                close(descriptor)
                throw error
            }
        }
        return ImportLock(path: path, descriptor: descriptor)
    }

    /// Whether an importer holds the lock of `database` now.
    static func isHeld(for database: String) -> Bool {
        let descriptor = open(DatabaseFiles(database).lock, O_RDWR | O_CLOEXEC)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else { return errno == EWOULDBLOCK }
        flock(descriptor, LOCK_UN)
        return false
    }

    /// Releases the lock; the file stays, so the next importer locks the same inode.
    package func release() {
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }
}
