import Foundation
import SeedSyncBuild
import SeedSyncClient

/// What the example of the SeedSyncBuild module page takes from the code around it (see
/// `scripts/tools/article-examples.py`).
enum SeedSyncBuildSeedSyncBuild {
    static let url = URL(string: "https://sync.example.com")!
    static let token: String? = "read-token"
}
