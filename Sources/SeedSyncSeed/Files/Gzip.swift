import CZlib
import Foundation
import SeedSyncGzip

/// gzip (RFC 1952) over zlib, for `.gz` seeds, streaming: memory stays at a few megabytes.
///
/// Compression runs on every core, as pigz does: the file is cut into 1 MiB blocks, each block
/// is deflated on its own, primed with the 32 KiB before it and ended with a sync flush (the last
/// one with the final block), so the pieces join into one ordinary gzip member. The output
/// depends on the level and the block size alone, not on the number of cores or the platform:
/// the header carries no name, no time and the "unknown" operating system.
package enum Gzip {
    /// Compresses the file at `source` into a new file at `destination`, synced.
    ///
    /// - Returns: the digests of the source and of the compressed file, from the same pass.
    @discardableResult
    package static func compress(_ source: String, to destination: String, level: Int32 = 6) throws -> (
        source: FileDigest, compressed: FileDigest
    ) {
        let output = try OutputFile(path: destination)
        defer { output.close() }
        var compressed = FileDigest.Hasher()
        func write(_ bytes: [UInt8]) throws {
            bytes.withUnsafeBytes { compressed.update($0) }
            try output.write(bytes)
        }
        try write(header)
        var checksum = crc32(0, nil, 0)
        let sourceDigest = try ParallelBlocks.read(source) { batch in
            let blocks = try batch.deflate(level: level)
            for block in blocks {
                try write(block.bytes)
                checksum = crc32_combine(checksum, block.checksum, block.count)
            }
        }
        try write(trailer(checksum: checksum, size: sourceDigest.size))
        try output.sync()
        return (sourceDigest, compressed.finalize())
    }

    /// ID1 ID2 CM FLG MTIME(4) XFL OS: deflate, no flags, no time, unknown OS.
    private static let header: [UInt8] = [0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 255]

    /// CRC-32 and size modulo 2^32, little-endian.
    private static func trailer(checksum: uLong, size: Int64) -> [UInt8] {
        let crc = UInt32(truncatingIfNeeded: checksum)
        let length = UInt32(truncatingIfNeeded: size)
        return (0..<4).map { UInt8(truncatingIfNeeded: crc >> ($0 * 8)) }
            + (0..<4).map { UInt8(truncatingIfNeeded: length >> ($0 * 8)) }
    }

    /// Decompresses the gzip file at `source`, handing each decompressed chunk to `body`.
    ///
    /// - Throws: ``SeedError`` when the file is not gzip, is truncated, or has bytes after its end.
    package static func decompress(_ source: String, _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        do {
            let inflater = try GzipInflater(chunkSize: FileChunks.chunkSize)
            try FileChunks.read(source) { chunk in try inflater.feed(chunk, body) }
            try inflater.finish()
        } catch let failure as GzipInflater.Failure {
            switch failure {
            case .unavailable: throw SeedError(.fileSystem, "gzip: cannot start the decompressor (out of memory?)")
            case .corrupt: throw SeedError(.damaged, "\(source) is not a valid gzip file")
            case .trailingBytes: throw SeedError(.damaged, "\(source) has bytes after the end of its gzip stream")
            case .truncated: throw SeedError(.damaged, "\(source) is truncated: its gzip stream does not end")
            }
        }
    }
}
