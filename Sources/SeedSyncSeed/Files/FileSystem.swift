package import Foundation
import SeedSyncSQL

#if canImport(Glibc)
import Glibc
private let posixWrite = Glibc.write
private let posixClose = Glibc.close
#elseif canImport(Darwin)
import Darwin
private let posixWrite = Darwin.write
private let posixClose = Darwin.close
#endif

/// The file operations that make a finished file appear atomically: write, sync, rename, sync
/// the folder. Every failure is a ``SeedError`` that names the file and the step, classified by
/// `errno` (a full disk is ``SeedError/Code/diskFull``, never a damaged seed).
///
/// Each operation is recorded in ``journal`` when a task sets one, so tests can check the order a
/// file is published in (written, synced, renamed, folder synced), which no crash test can see:
///
/// ```swift
/// let journal = FileSystem.Journal()
/// try await FileSystem.$journal.withValue(journal) { try await importer.run() }
/// // journal.operations: [.create(DB.installing), .sync(DB.installing), .rename(…), .syncDirectory(…)]
/// ```
package enum FileSystem {
    /// One operation on the file system, as ``Journal`` records it.
    package enum Operation: Hashable, Sendable {
        case create(String)
        case sync(String)
        case rename(String, to: String)
        case syncDirectory(String)
    }

    /// The operations of the tasks that set it, in order.
    package final class Journal: @unchecked Sendable {
        private let lock = NSLock()
        private var recorded: [Operation] = []

        package init() {}

        package var operations: [Operation] { lock.withLock { recorded } }

        func record(_ operation: Operation) {
            lock.withLock { recorded.append(operation) }
        }
    }

    /// Where this task's file operations are recorded; `nil` (the default) records nothing.
    @TaskLocal package static var journal: Journal?

    /// Flushes the file's data to disk.
    package static func sync(_ path: String) throws {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw SeedError.system(errno, "open \(path) to sync it") }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw SeedError.system(errno, "sync \(path) to disk") }
        journal?.record(.sync(path))
    }

    /// Renames `source` over `destination` (atomic on POSIX file systems).
    package static func rename(_ source: String, to destination: String) throws {
        guard Foundation.rename(source, destination) == 0 else {
            throw SeedError.system(errno, "rename \(source) to \(destination)")
        }
        journal?.record(.rename(source, to: destination))
    }

    /// Flushes the folder holding `path`, so renames in it survive a power loss.
    ///
    /// Some file systems cannot sync a folder (the call fails with `EINVAL`); the rename has
    /// happened by then, so a failure here is not reported.
    package static func syncDirectory(of path: String) {
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        let descriptor = open(directory, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        _ = fsync(descriptor)
        close(descriptor)
        journal?.record(.syncDirectory(directory))
    }

    /// Makes the file-size limit (`ulimit -f`) an error rather than a signal: by default the
    /// kernel kills a process that writes past it (`SIGXFSZ`), leaving half-written files and no
    /// word of why. Ignored, the write fails with `EFBIG`, reported as
    /// ``SeedError/Code/fileSizeLimit`` naming the file, and the usual clean-up runs. For the
    /// command-line tools; an app decides its own signal handling.
    package static func reportFileSizeLimitAsError() {
        signal(SIGXFSZ, SIG_IGN)
    }

    /// Whether the database at `path`, or one of its journals, is within a few pages of the
    /// process's file-size limit: the cause of a write that failed with an I/O error.
    package static func reachesFileSizeLimit(_ path: String) -> Bool {
        var limit = rlimit()
        #if canImport(Glibc)
        let (resource, unlimited) = (__rlimit_resource_t(RLIMIT_FSIZE.rawValue), rlim_t.max)  // RLIM_INFINITY
        #else
        let (resource, unlimited) = (RLIMIT_FSIZE, RLIM_INFINITY)
        #endif
        guard getrlimit(resource, &limit) == 0, limit.rlim_cur != unlimited else { return false }
        let margin: UInt64 = 64 << 10
        let files = DatabaseFiles(path)
        return [path, files.wal, files.journal].contains { file in
            let size = (try? FileManager.default.attributesOfItem(atPath: file)[.size] as? UInt64) ?? nil ?? 0
            return size + margin >= UInt64(limit.rlim_cur)
        }
    }

    /// Creates the folder that holds `path`, with its parents, when it is not there.
    package static func createFolder(for path: String) throws {
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        } catch {
            throw SeedError.file(error, "create the folder \(folder)")
        }
    }

    /// Writes `bytes` to a new file at `path` and syncs it; a file created by it gets `permissions`.
    package static func write(_ bytes: some DataProtocol, to path: String, permissions: mode_t = 0o644) throws {
        let output = try OutputFile(path: path, permissions: permissions)
        defer { output.close() }
        try output.write(Array(bytes))
        try output.sync()
    }
}

/// A file written front to back with POSIX calls, synced before it is renamed into place.
///
/// Failures are ``SeedError``s from `errno`, naming the file: "cannot write X: no space left on
/// the device", not a Foundation error without a path.
final class OutputFile {
    let path: String
    private var descriptor: Int32

    /// Creates the file (with `permissions`, less the umask), or empties the one at `path`.
    init(path: String, permissions: mode_t = 0o644) throws {
        descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, permissions)
        guard descriptor >= 0 else { throw SeedError.system(errno, "create \(path)") }
        self.path = path
        FileSystem.journal?.record(.create(path))
    }

    func write(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { try write($0) }
    }

    func write(_ bytes: UnsafeRawBufferPointer) throws {
        var offset = 0
        while offset < bytes.count {
            let written = posixWrite(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 {
                guard errno == EINTR else { throw SeedError.system(errno, "write \(path)") }
                continue
            }
            offset += written
        }
    }

    func sync() throws {
        guard fsync(descriptor) == 0 else { throw SeedError.system(errno, "sync \(path) to disk") }
        FileSystem.journal?.record(.sync(path))
    }

    func close() {
        guard descriptor >= 0 else { return }
        _ = posixClose(descriptor)
        descriptor = -1
    }

    deinit { close() }
}

extension FileHandle {
    /// Up to `count` bytes, empty at the end of the file; a failed read is a ``SeedError`` naming `path`.
    func read(upToCount count: Int, of path: String) throws -> Data {
        do {
            return try read(upToCount: count) ?? Data()
        } catch {
            throw SeedError.file(error, "read \(path)")
        }
    }
}
