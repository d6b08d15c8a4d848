import Foundation
import SeedSyncPostgres

/// The SeedSyncPostgres module page's example needs nothing around it (see
/// `scripts/article-examples.py`).
enum SeedSyncPostgresSeedSyncPostgres {}
