import Foundation
import SeedSyncBuild
import SeedSyncClient
import SeedSyncSeed

/// What the examples of the SeedSyncBuild "Getting Started" article take from the code around
/// them (see `scripts/tools/article-examples.py`).
enum SeedSyncBuildGettingStarted {
    static let client = SyncClient(
        configuration: .init(serverURL: URL(string: "https://sync.example.com")!, token: nil))
    static let builder = SeedBuilder(client: client, options: .init(output: "Snapshots/catalog.sqlite", gzip: true))
    static var report: BuildReport { fatalError("never run") }
}
