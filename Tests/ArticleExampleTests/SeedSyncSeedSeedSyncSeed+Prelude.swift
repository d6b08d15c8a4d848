import Foundation
import SeedSyncSeed

/// The SeedSyncSeed module page's examples need nothing around them (see
/// `scripts/article-examples.py`).
enum SeedSyncSeedSeedSyncSeed {}
