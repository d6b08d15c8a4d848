import CZlib
import Foundation

/// Streaming gzip (RFC 1952) over zlib, for `.gz` seeds: memory stays at one chunk either way.
///
/// Output is deterministic: the header carries no file name and a zero modification time.
package enum Gzip {
    /// Compresses the file at `source` into a new file at `destination`.
    package static func compress(_ source: String, to destination: String, level: Int32 = 6) throws {
        var stream = z_stream()
        guard deflateInit2_(&stream, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw SeedError("gzip: cannot start the compressor")
        }
        defer { deflateEnd(&stream) }
        let output = try OutputFile(path: destination)
        defer { output.close() }
        var buffer = [UInt8](repeating: 0, count: FileChunks.chunkSize)
        func pump(_ flush: Int32) throws {
            repeat {
                let status = buffer.withUnsafeMutableBufferPointer { out in
                    stream.next_out = out.baseAddress
                    stream.avail_out = UInt32(out.count)
                    return deflate(&stream, flush)
                }
                guard status != Z_STREAM_ERROR else { throw SeedError("gzip: compression failed") }
                try output.write(buffer[0..<(buffer.count - Int(stream.avail_out))])
            } while stream.avail_out == 0
        }
        try FileChunks.read(source) { chunk in
            stream.next_in = UnsafeMutablePointer(mutating: chunk.bindMemory(to: UInt8.self).baseAddress)
            stream.avail_in = UInt32(chunk.count)
            try pump(Z_NO_FLUSH)
        }
        stream.next_in = nil
        stream.avail_in = 0
        try pump(Z_FINISH)
        try output.sync()
    }

    /// Decompresses the gzip file at `source`, handing each decompressed chunk to `body`.
    ///
    /// - Throws: ``SeedError`` when the file is not gzip, is truncated, or has bytes after its end.
    package static func decompress(_ source: String, _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        var stream = z_stream()
        guard inflateInit2_(&stream, 15 + 16, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw SeedError("gzip: cannot start the decompressor")
        }
        defer { inflateEnd(&stream) }
        var buffer = [UInt8](repeating: 0, count: FileChunks.chunkSize)
        var ended = false
        try FileChunks.read(source) { chunk in
            guard !ended else { throw SeedError("\(source) has bytes after the end of its gzip stream") }
            stream.next_in = UnsafeMutablePointer(mutating: chunk.bindMemory(to: UInt8.self).baseAddress)
            stream.avail_in = UInt32(chunk.count)
            repeat {
                let status = buffer.withUnsafeMutableBufferPointer { out in
                    stream.next_out = out.baseAddress
                    stream.avail_out = UInt32(out.count)
                    return inflate(&stream, Z_NO_FLUSH)
                }
                guard status == Z_OK || status == Z_STREAM_END || status == Z_BUF_ERROR else {
                    throw SeedError("\(source) is not a valid gzip file")
                }
                try buffer.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[0..<(buffer.count - Int(stream.avail_out))])) }
                if status == Z_STREAM_END {
                    ended = true
                    guard stream.avail_in == 0 else { throw SeedError("\(source) has bytes after the end of its gzip stream") }
                    break
                }
            } while stream.avail_out == 0 || stream.avail_in > 0
        }
        guard ended else { throw SeedError("\(source) is truncated: its gzip stream does not end") }
    }
}

/// A file written front to back, synced before it is renamed into place.
final class OutputFile {
    private let handle: FileHandle

    init(path: String) throws {
        guard FileManager.default.createFile(atPath: path, contents: nil), let handle = FileHandle(forWritingAtPath: path) else {
            throw SeedError("cannot create \(path)")
        }
        self.handle = handle
    }

    func write(_ bytes: some DataProtocol) throws {
        try handle.write(contentsOf: bytes)
    }

    func write(_ bytes: UnsafeRawBufferPointer) throws {
        try handle.write(contentsOf: Data(bytes))
    }

    func sync() throws {
        try handle.synchronize()
    }

    func close() {
        try? handle.close()
    }
}
