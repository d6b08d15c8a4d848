import CZlib

/// A streaming gzip (RFC 1952) decompressor over zlib: compressed chunks in, decompressed chunks
/// out, and an error for a stream that is corrupt, does not end, or has bytes after its end.
///
/// It accepts exactly one gzip member. Memory stays at zlib's window plus one output chunk, so a
/// caller that must bound the output counts the chunks it is handed and stops early.
///
/// ```swift
/// let inflater = try GzipInflater()
/// for chunk in compressedChunks {
///     try inflater.feed(chunk) { output in consume(output) }
/// }
/// try inflater.finish()
/// ```
package final class GzipInflater {
    /// Why a gzip stream could not be decompressed.
    package enum Failure: Error, Sendable, Hashable {
        /// zlib could not start (out of memory).
        case unavailable
        /// The bytes are not a valid gzip stream (bad header, corrupt data, wrong checksum).
        case corrupt
        /// The stream ended before its last byte; the input has bytes after it.
        case trailingBytes
        /// The input ended before the stream did.
        case truncated
    }

    /// zlib keeps a pointer back to its stream, so the stream lives at a fixed address.
    private let stream: UnsafeMutablePointer<z_stream>
    private var output: [UInt8]
    /// Whether the end of the gzip stream has been decompressed.
    package private(set) var isFinished = false

    /// - Parameter chunkSize: the most bytes handed to `feed`'s closure at a time.
    /// - Throws: ``Failure/unavailable`` when zlib cannot start.
    package init(chunkSize: Int = 64 << 10) throws(Failure) {
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        output = [UInt8](repeating: 0, count: chunkSize)
        // Every property is set, so `deinit` runs even when this throws: it frees the stream
        // (`inflateEnd` on a stream that never started returns an error and touches nothing).
        guard inflateInit2_(stream, 15 + 16, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw .unavailable
        }
    }

    deinit {
        inflateEnd(stream)
        stream.deallocate()
    }

    /// Decompresses `input`, handing each decompressed chunk to `body` (valid during the call only).
    ///
    /// - Throws: ``Failure/corrupt`` for invalid data, ``Failure/trailingBytes`` for input after
    ///   the end of the stream, and whatever `body` throws.
    package func feed(_ input: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        guard !isFinished else {
            if input.isEmpty { return }
            throw Failure.trailingBytes
        }
        stream.pointee.next_in = UnsafeMutablePointer(mutating: input.assumingMemoryBound(to: Bytef.self).baseAddress)
        stream.pointee.avail_in = UInt32(input.count)
        defer {
            stream.pointee.next_in = nil
            stream.pointee.avail_in = 0
        }
        repeat {
            let status = output.withUnsafeMutableBufferPointer { out in
                stream.pointee.next_out = out.baseAddress
                stream.pointee.avail_out = UInt32(out.count)
                return inflate(stream, Z_NO_FLUSH)
            }
            guard status == Z_OK || status == Z_STREAM_END || status == Z_BUF_ERROR else { throw Failure.corrupt }
            let produced = output.count - Int(stream.pointee.avail_out)
            if produced > 0 {
                try output.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[0..<produced])) }
            }
            if status == Z_STREAM_END {
                isFinished = true
                guard stream.pointee.avail_in == 0 else { throw Failure.trailingBytes }
                return
            }
            if status == Z_BUF_ERROR { return }  // no progress possible: all input used, output drained
        } while stream.pointee.avail_out == 0 || stream.pointee.avail_in > 0
    }

    /// Checks that the whole stream has been fed.
    ///
    /// - Throws: ``Failure/truncated`` when the input ended before the gzip stream did.
    package func finish() throws(Failure) {
        guard isFinished else { throw .truncated }
    }
}
