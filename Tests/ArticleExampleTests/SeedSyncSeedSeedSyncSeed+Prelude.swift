import Foundation
import SeedSyncSeed

/// The SeedSyncSeed module page's examples need nothing around them (see
/// `scripts/tools/article-examples.py`).
enum SeedSyncSeedSeedSyncSeed {}
