import CZlib
import Foundation

/// A file read in batches of 1 MiB blocks, each block deflated on its own core (see ``Gzip``).
struct ParallelBlocks {
    static let blockSize = 1 << 20
    /// The history a block is primed with: deflate's whole window.
    static let windowSize = 32 << 10
    /// Blocks per batch: enough to keep every core busy, few enough to keep memory small.
    static let blocksPerBatch = max(4, 2 * ProcessInfo.processInfo.activeProcessorCount)

    /// The batch's bytes, preceded by up to ``windowSize`` bytes of the one before.
    private var bytes: [UInt8]
    private var historyCount: Int
    /// Whether the file ends with this batch.
    private var isLast: Bool

    /// Reads `path` batch by batch, hashing it as it goes.
    ///
    /// - Returns: the file's digest.
    static func read(_ path: String, _ body: (ParallelBlocks) throws -> Void) throws -> FileDigest {
        guard let handle = FileHandle(forReadingAtPath: path) else { throw SeedError.system(errno, "read \(path)") }
        defer { try? handle.close() }
        // Only the reads are the file's failures; what `body` throws passes as it is.
        func read() throws -> Data { try handle.read(upToCount: blockSize * blocksPerBatch, of: path) }
        var hasher = FileDigest.Hasher()
        var history: [UInt8] = []
        var batch = try read()
        while true {
            let next = batch.count == blockSize * blocksPerBatch ? try read() : Data()
            batch.withUnsafeBytes { hasher.update($0) }
            let blocks = ParallelBlocks(bytes: history + batch, historyCount: history.count, isLast: next.isEmpty)
            try body(blocks)
            if next.isEmpty { return hasher.finalize() }
            history = Array(batch.suffix(windowSize))
            batch = next
        }
    }

    /// One deflated block: raw deflate data, and the CRC-32 and length of its input.
    struct Block {
        var bytes: [UInt8]
        var checksum: uLong
        var count: Int
    }

    /// Deflates every block of the batch, in parallel, in order.
    func deflate(level: Int32) throws -> [Block] {
        let count = bytes.count - historyCount
        let blockCount = max(1, (count + Self.blockSize - 1) / Self.blockSize)
        var results = [Result<Block, SeedError>?](repeating: nil, count: blockCount)
        let (historyCount, isLast) = (self.historyCount, self.isLast)
        bytes.withUnsafeBufferPointer { input in
            results.withUnsafeMutableBufferPointer { slots in
                let shared = Shared(input: input, slots: slots)
                DispatchQueue.concurrentPerform(iterations: blockCount) { index in
                    let start = historyCount + index * Self.blockSize
                    let end = min(start + Self.blockSize, shared.input.count)
                    let history = UnsafeBufferPointer(rebasing: shared.input[max(0, start - Self.windowSize)..<start])
                    let block = UnsafeBufferPointer(rebasing: shared.input[start..<end])
                    let finish = isLast && index == blockCount - 1
                    shared.slots[index] = Result { () throws(SeedError) in
                        try Self.deflate(block, history: history, finish: finish, level: level)
                    }
                }
            }
        }
        return try results.map { try $0!.get() }
    }

    /// The batch and the result slots, shared by the workers: they only read the input, and each
    /// writes its own slot.
    private struct Shared: @unchecked Sendable {
        let input: UnsafeBufferPointer<UInt8>
        let slots: UnsafeMutableBufferPointer<Result<Block, SeedError>?>
    }

    /// Raw deflate of `input` primed with `history`, ending in a sync flush, or the final block when `finish`.
    private static func deflate(
        _ input: UnsafeBufferPointer<UInt8>, history: UnsafeBufferPointer<UInt8>, finish: Bool, level: Int32
    ) throws(SeedError) -> Block {
        var stream = z_stream()
        guard
            deflateInit2_(
                &stream, level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY, zlibVersion(),
                Int32(MemoryLayout<z_stream>.size)) == Z_OK
        else {
            throw SeedError(.fileSystem, "gzip: cannot start the compressor (out of memory?)")
        }
        defer { deflateEnd(&stream) }
        if !history.isEmpty {
            guard deflateSetDictionary(&stream, history.baseAddress, UInt32(history.count)) == Z_OK else {
                throw SeedError(.fileSystem, "gzip: cannot prime the compressor")
            }
        }
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, uLong(input.count))) + 16)
        stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress)
        stream.avail_in = UInt32(input.count)
        let status = output.withUnsafeMutableBufferPointer { out in
            stream.next_out = out.baseAddress
            stream.avail_out = UInt32(out.count)
            return CZlib.deflate(&stream, finish ? Z_FINISH : Z_SYNC_FLUSH)
        }
        guard status == (finish ? Z_STREAM_END : Z_OK), stream.avail_in == 0 else {
            throw SeedError(.fileSystem, "gzip: compression failed")
        }
        output.removeLast(Int(stream.avail_out))
        return Block(bytes: output, checksum: crc32(0, input.baseAddress, UInt32(input.count)), count: input.count)
    }
}
