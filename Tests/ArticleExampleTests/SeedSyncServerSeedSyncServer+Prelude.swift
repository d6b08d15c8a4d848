import Foundation
import SeedSyncSQLiteStore
import SeedSyncServer
import SeedSyncStore

/// The SeedSyncServer module page's example needs nothing around it (see
/// `scripts/article-examples.py`).
enum SeedSyncServerSeedSyncServer {}
