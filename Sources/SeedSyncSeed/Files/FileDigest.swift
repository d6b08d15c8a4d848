import Crypto
import Foundation
import SeedSyncModel

/// The size and SHA-256 of a file's bytes, as a manifest records them.
package struct FileDigest: Sendable, Hashable {
    package var size: Int64
    /// Lowercase hexadecimal.
    package var sha256: String

    /// Reads the file at `path` in 1 MiB chunks and hashes it.
    ///
    /// ```swift
    /// let digest = try FileDigest(ofFile: "demo.sqlite")
    /// ```
    package init(ofFile path: String) throws {
        var hasher = FileDigest.Hasher()
        try FileChunks.read(path) { hasher.update($0) }
        self = hasher.finalize()
    }

    init(size: Int64, sha256: String) {
        self.size = size
        self.sha256 = sha256
    }

    /// Hashes bytes as they stream past (a download, a decompression).
    struct Hasher {
        private var sha = SHA256()
        private var size: Int64 = 0

        mutating func update(_ bytes: UnsafeRawBufferPointer) {
            sha.update(bufferPointer: bytes)
            size += Int64(bytes.count)
        }

        func finalize() -> FileDigest {
            FileDigest(size: size, sha256: sha.finalize().lowercaseHex)
        }
    }
}

/// Reads files in fixed-size chunks without loading them whole.
enum FileChunks {
    static let chunkSize = 1 << 20

    static func read(_ path: String, _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        guard let handle = FileHandle(forReadingAtPath: path) else { throw SeedError.system(errno, "read \(path)") }
        defer { try? handle.close() }
        // Only the reads are the file's failures; what `body` throws passes as it is.
        while case let chunk = try handle.read(upToCount: chunkSize, of: path), !chunk.isEmpty {
            try chunk.withUnsafeBytes(body)
        }
    }
}
