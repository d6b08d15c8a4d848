import SeedSyncModel
import SeedSyncStore

/// What the example of the SeedSyncStore module page takes from the code around it (see
/// `scripts/tools/article-examples.py`): nothing.
enum SeedSyncStoreSeedSyncStore {}
