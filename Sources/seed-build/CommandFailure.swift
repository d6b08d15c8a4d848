import SeedSyncClient
import SeedSyncSeed

/// A failure of the command, printed as it is.
struct CommandFailure: Error, CustomStringConvertible {
    let description: String

    /// `error`, followed by the flag or variable that helps, when one does: the libraries'
    /// messages say what failed and where; the flags belong to the command line.
    static func hinted(_ error: any Error) -> any Error {
        let hint: String? =
            switch error {
            case let error as SyncClientError where error.code == .unauthorized:
                "check the token (SEED_TOKEN or --token-file)"
            case let error as SyncClientError where error.code == .unreadableTokenFile:
                "check the path given to --token-file"
            case let error as SeedError where error.code == .alreadyExists: "remove it, or continue it with --resume"
            case let error as SeedError where error.code == .notResumable: "build without --resume"
            case let error as SeedError where error.code == .unusable: "the types are chosen with --types"
            default: nil
            }
        return hint.map { CommandFailure(description: "\(error); \($0)") } ?? error
    }
}
