import Foundation
import SeedSyncModel
import SeedSyncSQLiteStore
import SeedSyncStore

/// What the example of the SeedSyncSQLiteStore module page takes from the code around it (see
/// `scripts/tools/article-examples.py`).
enum SeedSyncSQLiteStoreSeedSyncSQLiteStore {
    static var schema: DatasetSchema { fatalError("never run") }
    static var changeSet: ChangeSet { fatalError("never run") }
}
