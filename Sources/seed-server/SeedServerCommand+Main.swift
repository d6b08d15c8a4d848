import ArgumentParser
import SeedSyncCLI
import SeedSyncPostgres
import SeedSyncSQLiteStore
import SeedSyncServer
import SeedSyncStore

extension SeedServerCommand {
    /// Runs the chosen subcommand; a failure is printed with the hint that helps, when one does.
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var command = command as? any AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch {
            exit(withError: CommandFailure.hinted(error, by: hint(for:)))
        }
    }

    /// The command, flag or variable that helps with `error`, when one does: the libraries'
    /// messages say what failed and where; the commands and flags belong here.
    static func hint(for error: any Error) -> String? {
        switch error {
        case let error as StoreError where error.code == .missingDatabase:
            "create one with `seed-server init`"
        case let error as PostgresStoreError where error.code == .notInitialized:
            "create one with `seed-server init`, or attach existing tables with `seed-server init --attach --schema FILE`"
        case let error as PostgresStoreError where error.code == .alreadyInitialized:
            "`seed-server serve` serves a store that is there; `seed-server init --attach --schema FILE` serves existing tables"
        case let error as PostgresStoreError where error.code == .unreachable:
            "check --database, and the password in PGPASSWORD or --database-password-file"
        case let error as PostgresStoreError where error.code == .invalidLocation:
            "check --database (postgres://USER@HOST:PORT/DATABASE) and --database-password-file"
        case let error as TokenFileError where error.code == .unreadable:
            "check the paths given to --token-file, --write-token-file and --admin-token-file"
        case let error as KeySetError where error.code == .weakSecret:
            "use a longer SEED_SERVER_JWT_SECRET or --jwt-secret-file"
        case is KeySetError:
            "check --jwks-file or --jwks-url"
        default: nil
        }
    }
}
