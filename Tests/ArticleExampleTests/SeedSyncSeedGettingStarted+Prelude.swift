import Foundation
import SeedSyncSeed

/// What the examples of the SeedSyncSeed "Getting Started" article take from the code around
/// them (see `scripts/tools/article-examples.py`).
enum SeedSyncSeedGettingStarted {
    static var seed: SeedFile { fatalError("never run") }
    static var metadata: SeedMetadata { fatalError("never run") }
}
