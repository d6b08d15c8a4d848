import Foundation
import SeedSyncPostgres
import SeedSyncSQLiteStore
import SeedSyncServer
import SeedSyncStore

/// What the examples of the SeedSyncServer "Getting Started" article take from the code around
/// them (see `scripts/tools/article-examples.py`).
enum SeedSyncServerGettingStarted {
    static var store: SQLiteSyncStore { fatalError("never run") }
    static var configuration: ServerConfiguration { fatalError("never run") }
    static var location: PostgresLocation { fatalError("never run") }
}
