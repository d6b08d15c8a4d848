import Foundation
import SeedSyncSeed
import SeedSyncTesting
import Testing

@Suite struct GzipTests {
    /// Blocks compressed on several cores join into one gzip member that `gunzip` reads back:
    /// empty, under one block, exactly on block and batch boundaries, and over several batches.
    @Test(arguments: [0, 1_000, 1 << 20, 3 << 20 + 17, 20 << 20])
    func compressedBlocksDecompressToTheSameBytes(size: Int) async throws {
        try await withTemporaryDirectory { directory in
            let source = directory.appendingPathComponent("data").path
            let bytes = Self.sample(count: size)
            try Data(bytes).write(to: URL(fileURLWithPath: source))
            let digests = try Gzip.compress(source, to: source + ".gz")
            #expect(digests.source == (try FileDigest(ofFile: source)))
            #expect(digests.compressed == (try FileDigest(ofFile: source + ".gz")))
            var restored = Data()
            try Gzip.decompress(source + ".gz") { restored.append(contentsOf: $0) }
            #expect(restored == Data(bytes))
            let gunzip = try await Self.gunzip(source + ".gz")
            #expect(gunzip == Data(bytes))
        }
    }

    /// The output depends on the bytes alone: the same file compresses to the same `.gz`.
    @Test func outputIsDeterministic() async throws {
        try await withTemporaryDirectory { directory in
            let source = directory.appendingPathComponent("data").path
            try Data(Self.sample(count: 5 << 20)).write(to: URL(fileURLWithPath: source))
            let first = try Gzip.compress(source, to: source + ".1.gz").compressed
            let second = try Gzip.compress(source, to: source + ".2.gz").compressed
            #expect(first == second)
            let header = try Data(contentsOf: URL(fileURLWithPath: source + ".1.gz")).prefix(10)
            #expect(Array(header) == [0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 255])
        }
    }

    /// Compressible but not trivial: repeated words with a changing counter.
    private static func sample(count: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count + 32)
        var line = 0
        while bytes.count < count {
            bytes.append(contentsOf: "row \(line) title \(line % 97) seedsync\n".utf8)
            line += 1
        }
        return Array(bytes.prefix(count))
    }

    private static func gunzip(_ path: String) async throws -> Data {
        let gzip = try await Executables.run("/usr/bin/env", ["gzip", "-dc", path])
        #expect(gzip.status == 0, "\(gzip.stderr)")
        return gzip.output
    }
}
