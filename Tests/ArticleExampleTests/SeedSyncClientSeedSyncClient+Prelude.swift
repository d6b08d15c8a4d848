import Foundation
import SeedSyncClient

/// What the examples of the SeedSyncClient module page take from the app around them (see
/// `scripts/tools/article-examples.py`).
enum SeedSyncClientSeedSyncClient {
    static let client = SyncClient(
        configuration: .init(serverURL: URL(string: "https://sync.example.com")!, token: nil))
}
