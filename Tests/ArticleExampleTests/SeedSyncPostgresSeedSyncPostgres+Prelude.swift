import Foundation
import SeedSyncPostgres

/// The SeedSyncPostgres module page's example needs nothing around it (see
/// `scripts/tools/article-examples.py`).
enum SeedSyncPostgresSeedSyncPostgres {}
