import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A small tmpfs mounted for one test, so that a full disk is real, not simulated.
///
/// Mounting needs root on Linux; tests that use it are enabled by ``isAvailable`` (CI runs as
/// root). The volume is unmounted when the body returns or throws.
///
/// ```swift
/// try await SmallVolume.with(kilobytes: 2048) { volume in
///     try volume.fill(leaving: 20 << 10)   // 20 KiB free
/// }
/// ```
public struct SmallVolume: Sendable {
    public let path: String

    /// Whether this process can mount a tmpfs (root on Linux, with the right to mount): tried
    /// once, with a tmpfs mounted and unmounted at once.
    public static let isAvailable: Bool = {
        #if os(Linux)
        guard geteuid() == 0 else { return false }
        let probe = FileManager.default.temporaryDirectory.appendingPathComponent(
            "seedsync-tmpfs-probe-\(UUID().uuidString)"
        ).path
        guard (try? FileManager.default.createDirectory(atPath: probe, withIntermediateDirectories: true)) != nil else {
            return false
        }
        defer { try? FileManager.default.removeItem(atPath: probe) }
        guard (try? run("/bin/mount", ["-t", "tmpfs", "-o", "size=64k", "tmpfs", probe])) != nil else { return false }
        return (try? run("/bin/umount", [probe])) != nil
        #else
        return false
        #endif
    }()

    /// Mounts a tmpfs of `kilobytes` KiB in a temporary folder, runs `body`, unmounts it.
    public static func with<T>(kilobytes: Int, _ body: (SmallVolume) async throws -> T) async throws -> T {
        try await withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("volume").path
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            try await offPool { try run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(kilobytes)k", "tmpfs", path]) }
            do {
                let result = try await body(SmallVolume(path: path))
                try await offPool { try run("/bin/umount", ["-l", path]) }
                return result
            } catch {
                _ = try? await offPool { try run("/bin/umount", ["-l", path]) }
                throw error
            }
        }
    }

    public func path(_ name: String) -> String { (path as NSString).appendingPathComponent(name) }

    /// Bytes free on the volume.
    public var freeBytes: Int64 {
        var stats = statvfs()
        guard statvfs(path, &stats) == 0 else { return 0 }
        return Int64(stats.f_bavail) * Int64(stats.f_frsize)
    }

    /// Writes a filler file so that about `bytes` stay free.
    public func fill(leaving bytes: Int64) throws {
        let size = max(0, freeBytes - bytes)
        try Data(count: Int(size)).write(to: URL(fileURLWithPath: path(".filler")))
    }

    /// Runs a system tool to its end on the calling thread; fails unless it exits with 0.
    @available(*, noasync, message: "a blocked pool thread starves the in-process servers")
    private static func run(_ tool: String, _ arguments: [String]) throws {
        let result = try Executables.runBlocking(tool, arguments)
        guard result.status == 0 else {
            throw CocoaError(
                .fileWriteUnknown,
                userInfo: [
                    NSLocalizedDescriptionKey: "\(tool) \(arguments.joined(separator: " ")) failed: \(result.stderr)"
                ])
        }
    }
}
