import Foundation
import SeedSyncModel
import SeedSyncStore

/// What the example of the SeedSyncStore module page takes from the code around it (see
/// `scripts/article-examples.py`).
enum SeedSyncStoreSeedSyncStore {
    static var schema: DatasetSchema { fatalError("never run") }
    static var changeSet: ChangeSet { fatalError("never run") }
}
