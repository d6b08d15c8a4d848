import Foundation
import SeedSyncClient
import SeedSyncImport
import SeedSyncModel

/// What the examples of the SeedSyncImport "Getting Started" article take from the app around them
/// (see `scripts/tools/article-examples.py`).
enum SeedSyncImportGettingStarted {
    static let token = "token"
    static let importer = SeedImporter(
        configuration: .init(
            seed: "catalog.sqlite.gz", database: "catalog.sqlite",
            server: .init(serverURL: URL(string: "https://sync.example.com")!, token: token)))

    static func refresh(_ type: String, changed: [JSONValue], removed: [JSONValue]) {}
    static func showLowDiskSpaceWarning() {}
    static func askForWriteAccess() {}
    static func retryLater() {}
    static func askForNewToken() {}
    static func log(_ error: any Error) {}
}
