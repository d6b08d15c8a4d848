import SeedSyncClient

/// A failure of the command, printed as it is.
struct CommandFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }

    /// `error`, followed by the flag or variable that helps, when one does: the libraries'
    /// messages say what failed and where; the flags belong to the command line.
    static func hinted(_ error: any Error) -> any Error {
        let hint: String? =
            switch error {
            case let error as SyncClientError where error.code == .unauthorized:
                "check the token (SEED_TOKEN or --token-file)"
            case let error as SyncClientError where error.code == .unreadableTokenFile:
                "check the path given to --token-file"
            default: nil
            }
        return hint.map { CommandFailure("\(error); \($0)") } ?? error
    }
}
