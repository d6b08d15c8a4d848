import Foundation
import SeedSyncClient

/// What the examples of the SeedSyncClient module page take from the app around them (see
/// `scripts/tools/article-examples.py`).
enum SeedSyncClientSeedSyncClient {
    static let url = URL(string: "https://sync.example.com")!
    static let client = SyncClient(configuration: .init(serverURL: url, token: nil))
    static let session = Session()

    /// An app's sign-in session with its identity provider.
    struct Session: Sendable {
        func accessToken(forceRefresh: Bool) async throws -> String { "" }
    }
}
