import Foundation
import SeedSyncClient
import SeedSyncModel

/// What the examples of the SeedSyncClient "Getting Started" article take from the app around
/// them (see `scripts/tools/article-examples.py`).
enum SeedSyncClientGettingStarted {
    static let client = SyncClient(
        configuration: .init(serverURL: URL(string: "https://sync.example.com")!, token: nil))
    static var info: SchemaInfo { fatalError("never run") }
    nonisolated(unsafe) static var revision: Int64 = 0

    static func save(_ rows: [[JSONValue]], of type: String) {}
    static func apply(_ changeSet: ChangeSet) {}
}
