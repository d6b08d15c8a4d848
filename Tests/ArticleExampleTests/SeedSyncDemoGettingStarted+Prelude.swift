import Foundation
import SeedSyncDemo
import SeedSyncModel
import SeedSyncSQLiteStore
import SeedSyncStore

/// What the examples of the SeedSyncDemo "Getting Started" article take from the code around
/// them (see `scripts/tools/article-examples.py`).
enum SeedSyncDemoGettingStarted {
    static var store: SQLiteSyncStore { fatalError("never run") }
}
