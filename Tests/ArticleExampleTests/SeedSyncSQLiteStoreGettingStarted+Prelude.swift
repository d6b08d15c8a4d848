import Foundation
import SeedSyncModel
import SeedSyncSQLiteStore
import SeedSyncStore

/// What the examples of the SeedSyncStore "Getting Started" article take from the code around
/// them (see `scripts/tools/article-examples.py`).
enum SeedSyncSQLiteStoreGettingStarted {
    static var store: SQLiteSyncStore { fatalError("never run") }
}
