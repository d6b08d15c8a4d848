import Foundation
import SeedSyncSQLiteStore
import SeedSyncServer
import SeedSyncStore

/// The SeedSyncServer module page's example needs nothing around it (see
/// `scripts/tools/article-examples.py`).
enum SeedSyncServerSeedSyncServer {}
