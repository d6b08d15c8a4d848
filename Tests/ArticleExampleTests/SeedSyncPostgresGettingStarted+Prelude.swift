import Foundation
import SeedSyncModel
import SeedSyncPostgres
import SeedSyncServer

/// What the examples of the SeedSyncPostgres "Getting Started" article take from the code around
/// them (see `scripts/tools/article-examples.py`).
enum SeedSyncPostgresGettingStarted {
    static var location: PostgresLocation { fatalError("never run") }
}
