import Foundation
import SeedSyncModel

/// What the example of the SeedSyncModel module page takes from the code around it (see
/// `scripts/tools/article-examples.py`).
enum SeedSyncModelSeedSyncModel {
    static let body: [UInt8] = []
}
