import Foundation

/// Copies a seed, decompressing a `.gz` on the way, and hashes the bytes it writes: one pass.
package enum FileCopy {
    /// Writes the bytes of `source` (decompressed when `decompress` is set) to a new file at
    /// `destination` and syncs it.
    ///
    /// - Parameter limit: the most bytes to write; a larger source fails before filling the disk.
    /// - Returns: the size and SHA-256 of what was written.
    /// - Throws: ``SeedError`` when `source` cannot be read, is not valid gzip, or exceeds `limit`;
    ///   `destination` may then hold part of the bytes, and the caller removes it.
    @discardableResult
    package static func copy(_ source: String, to destination: String, decompress: Bool, limit: Int64 = .max) throws
        -> FileDigest
    {
        let output = try OutputFile(path: destination)
        defer { output.close() }
        var hasher = FileDigest.Hasher()
        var size: Int64 = 0
        let write = { (chunk: UnsafeRawBufferPointer) throws in
            size += Int64(chunk.count)
            guard size <= limit else {
                throw SeedError(.damaged, "\(source) holds more than the manifest's \(limit) bytes")
            }
            hasher.update(chunk)
            try output.write(chunk)
        }
        if decompress {
            try Gzip.decompress(source, write)
        } else {
            try FileChunks.read(source, write)
        }
        try output.sync()
        return hasher.finalize()
    }
}
