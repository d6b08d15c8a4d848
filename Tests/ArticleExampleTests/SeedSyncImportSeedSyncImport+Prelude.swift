import Foundation
import SeedSyncClient
import SeedSyncImport

/// What the examples of the SeedSyncImport module page take from the app around them (see
/// `scripts/tools/article-examples.py`).
enum SeedSyncImportSeedSyncImport {
    static let seedPath = "catalog.sqlite.gz"
    static let databasePath = "catalog.sqlite"
    static let url = URL(string: "https://sync.example.com")!
    static let token = "token"
    static let importer = SeedImporter(
        configuration: .init(seed: seedPath, database: databasePath, server: .init(serverURL: url, token: token)))
}
