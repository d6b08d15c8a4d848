import Foundation
import SeedSyncBuild
import SeedSyncSeed
import SeedSyncTesting
import Testing

/// `seed-build` onto a volume that fills up (a small tmpfs): a clear error, and nothing left
/// behind to keep the volume full. 256 KiB fill up early in the download, 640 KiB late in it. (The
/// download's work file with its WAL is the build's peak; the finish needs less. A copy that fills
/// its volume: `SeedBuilderTests.aCopyThatFillsItsVolumeKeepsTheWorkFile`.)
@Suite(.enabled(if: SmallVolume.isAvailable, "mounting a tmpfs needs root"))
struct FullVolumeTests {
    @Test(arguments: [256, 640])
    func aFullVolumeFailsTheBuildNamesTheNeedAndLeavesNothing(kilobytes: Int) async throws {
        try await withServedStore(events: 4000) { served in
            try await SmallVolume.with(kilobytes: kilobytes) { volume in
                let output = volume.path("seed.sqlite")
                let builder = SeedBuilder(
                    client: served.client(), options: .init(output: output, pageSize: 500, gzip: true))
                await #expect { try await builder.build() } throws: { error in
                    guard let error = error as? SeedError else { return false }
                    return error.code == .diskFull
                        && error.description.contains("cannot write \(volume.path("seed.sqlite.partial"))")
                        && error.description.contains("needs about")
                }
                let leftovers = try FileManager.default.contentsOfDirectory(atPath: volume.path)
                #expect(leftovers.isEmpty, "\(leftovers)")

                // --resume has nothing to resume and fails the same clean way.
                let resumed = SeedBuilder(
                    client: served.client(), options: .init(output: output, pageSize: 500, gzip: true, resume: true))
                await #expect { try await resumed.build() } throws: { ($0 as? SeedError)?.code == .diskFull }
                let after = try FileManager.default.contentsOfDirectory(atPath: volume.path)
                #expect(after.isEmpty, "\(after)")
            }
        }
    }
}
