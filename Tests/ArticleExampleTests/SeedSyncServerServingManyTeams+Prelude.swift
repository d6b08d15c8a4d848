import Foundation
import SeedSyncBuild
import SeedSyncClient
import SeedSyncImport
import SeedSyncSQLiteStore
import SeedSyncServer

/// What the examples of the SeedSyncServer "Serving many teams" article take from the code around
/// them (see `scripts/tools/article-examples.py`).
enum SeedSyncServerServingManyTeams {
    static var store: SQLiteSyncStore { fatalError("never run") }
    static var tokens: TokenSet { fatalError("never run") }
    static var client: SyncClient { fatalError("never run") }
    static let seedPath = "clubs.team-42.sqlite"
    static let databasePath = "Library/clubs.sqlite"
    static let serverURL = URL(string: "https://sync.example.com")!
    static var session: Session { fatalError("never run") }

    /// The app's sign-in session.
    struct Session {
        func freshToken() async throws -> String { "" }
    }
}
