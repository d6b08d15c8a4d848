import ArgumentParser
import Foundation
import SeedSyncCLI
import SeedSyncClient
import SeedSyncTesting
import Testing

/// The command line's connection options: `--server` checked, the token from `SEED_TOKEN` or a file.
@Suite struct ServerOptionsTests {
    @Test func tokensComeFromTheEnvironmentOrAFile() async throws {
        try await withTemporaryDirectory { directory in
            let server = ["--server", "http://127.0.0.1:8080"]
            let plain = try ServerOptions.parse(server)
            #expect(try plain.token(environment: ["SEED_TOKEN": " abc \n"]) == "abc")
            #expect(try plain.token(environment: [:]) == nil)
            let file = directory.appendingPathComponent("token")
            try "from-file\n".write(to: file, atomically: true, encoding: .utf8)
            let fromFile = try ServerOptions.parse(server + ["--token-file", file.path])
            #expect(try fromFile.token(environment: ["SEED_TOKEN": "env"]) == "from-file")
            let missing = try ServerOptions.parse(server + ["--token-file", directory.path + "/none"])
            #expect(throws: CommandFailure.self) { try missing.token(environment: [:]) }
        }
    }

    @Test func theServerIsAnHTTPURLWithAHost() throws {
        #expect(
            try ServerOptions.parse(["--server", "https://sync.example.com/base"]).server.host == "sync.example.com")
        for bad in ["ftp://example.com", "example.com", "http://", "not a url"] {
            #expect(throws: (any Error).self, "\(bad)") { try ServerOptions.parse(["--server", bad]) }
        }
        #expect(throws: (any Error).self, "--server is required") { try ServerOptions.parse([]) }
    }

    @Test func aRefusedTokenGetsTheHintOfWhereTokensComeFrom() {
        let refused = SyncClientError(.unauthorized, "GET /v1/schema: 401")
        #expect(
            "\(CommandFailure.hinted(refused, by: ServerOptions.hint(for:)))".hasSuffix("(SEED_TOKEN or --token-file)"))
        let other = SyncClientError(.serverError, "GET /v1/schema: 500")
        #expect(
            CommandFailure.hinted(other, by: ServerOptions.hint(for:)) is SyncClientError, "no hint: the error itself")
    }
}
