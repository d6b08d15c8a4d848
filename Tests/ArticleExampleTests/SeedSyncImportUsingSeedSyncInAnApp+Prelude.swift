import Foundation
import GRDB
import SeedSyncClient
import SeedSyncImport
import SeedSyncModel

/// What the examples of "Using SeedSync in an App" take from the app around them (see
/// `scripts/tools/article-examples.py`); the examples themselves are in the generated file beside this one.
enum SeedSyncImportUsingSeedSyncInAnApp {
    static let seedPath = "events.sqlite.gz"
    static let databasePath = "app.sqlite"
    static let url = URL(string: "https://sync.example.com")!
    static let token = "token"
    static let server = SyncClient.Configuration(serverURL: url, token: token)
    static let engine = SyncEngine(configuration: .init(seed: seedPath, database: databasePath, server: server))
    nonisolated(unsafe) static var configuration = SeedImporter.Configuration(
        seed: seedPath, database: databasePath, server: server)
    nonisolated(unsafe) static var statusLine = ""
    static let newTitle: JSONValue = "Opening night"
    static let openEvent: JSONValue = 5
    static let form = Form()

    static func show(_ value: Any?) {}

    /// The app's form showing the row being edited.
    final class Form: Sendable {
        func warnAndWaitUntilClosed() async {}
    }
}
