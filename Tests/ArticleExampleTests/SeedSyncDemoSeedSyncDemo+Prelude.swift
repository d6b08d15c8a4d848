import Foundation
import SeedSyncDemo
import SeedSyncModel
import SeedSyncSQLiteStore
import SeedSyncStore

/// What the examples of the SeedSyncDemo module page take from the code around them (see
/// `scripts/tools/article-examples.py`).
enum SeedSyncDemoSeedSyncDemo {
    static var store: SQLiteSyncStore { fatalError("never run") }
}
