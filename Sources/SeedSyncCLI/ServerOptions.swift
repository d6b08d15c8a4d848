package import ArgumentParser
package import Foundation
package import SeedSyncClient

/// The options of every command that talks to a SeedSync server: `--server`, and the token from
/// `SEED_TOKEN` or `--token-file`. The libraries take a token; only the command line reads the
/// environment and files for one.
///
/// ```swift
/// struct BuildCommand: AsyncParsableCommand {
///     @OptionGroup var connection: ServerOptions
///     func run() async throws {
///         let client = SyncClient(configuration: try connection.client())
///     }
/// }
/// ```
package struct ServerOptions: ParsableArguments {
    @Option(help: "The server's base URL, such as http://127.0.0.1:8080.", transform: ServerOptions.serverURL)
    package var server: URL
    @Option(
        help:
            "A file holding the bearer token (instead of SEED_TOKEN), read again when the server refuses it: renew a short-lived token in place."
    )
    package var tokenFile: String?

    package init() {}

    /// The client configuration for `--server` with the token, each request waiting at most
    /// `requestTimeout` seconds for data. A `--token-file` is read again after a 401
    /// (``TokenProvider/file(_:)``), so a long import outlives a token renewed in the file.
    ///
    /// - Throws: ``CommandFailure`` when the token file cannot be read now.
    package func client(requestTimeout: TimeInterval = 30) throws -> SyncClient.Configuration {
        let token = try token()
        return SyncClient.Configuration(
            serverURL: server, tokens: tokenFile.map { .file($0) } ?? .fixed(token), requestTimeout: requestTimeout)
    }

    /// The token: what `--token-file` holds when given, else `SEED_TOKEN`, surrounding
    /// whitespace trimmed; `nil` when neither is there.
    ///
    /// - Throws: ``CommandFailure`` when the file cannot be read.
    package func token(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> String? {
        guard let tokenFile else {
            return environment["SEED_TOKEN"].map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        }
        guard let data = FileManager.default.contents(atPath: tokenFile) else {
            throw CommandFailure("cannot read the token file \(tokenFile); check the path given to --token-file")
        }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The flag or variable that helps with a client's `error`, when one does.
    package static func hint(for error: any Error) -> String? {
        guard let error = error as? SyncClientError, error.code == .unauthorized else { return nil }
        return "check the token (SEED_TOKEN or --token-file)"
    }

    /// `--server` as an http or https URL with a host.
    static func serverURL(_ text: String) throws -> URL {
        guard let url = URL(string: text), ["http", "https"].contains(url.scheme ?? ""), url.host != nil else {
            throw ValidationError("--server must be an http or https URL, such as http://127.0.0.1:8080")
        }
        return url
    }
}
