import Foundation
import SeedSyncModel

/// What the examples of the SeedSyncModel "Getting Started" article take from the code around
/// them (see `scripts/tools/article-examples.py`).
enum SeedSyncModelGettingStarted {
    static var schema: DatasetSchema { fatalError("never run") }
    static var books: EntityType { fatalError("never run") }
    static let responseBody: [UInt8] = []
}
