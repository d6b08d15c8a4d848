import Foundation
import SeedSyncModel
import SeedSyncPostgres
import SeedSyncTesting
import Testing

/// The built `seed-server` on PostgreSQL, run as a user would: every command on a URL, the schema
/// printer, attach, and one clear line for what cannot work.
@Suite(.needsPostgres, .tags(.postgres)) struct PostgresCommandLineTests {
    @Test func schemaAttachMutateLoadAndCompactOnAURL() async throws {
        try await withTeamDatabase { location in
            let url = location.description
            let printed = try await Executables.run(
                "seed-server", ["schema", "--database", url, "--tables", "venues,shows", "--dataset", "shows"])
            #expect(printed.status == 0, "\(printed.stderr)")
            #expect(try JSONDecoder().decode(DatasetSchema.self, from: Data(printed.stdout.utf8)) == teamSchema)
            let file = try TemporaryFile(named: "schema.json", contents: printed.stdout)

            let attached = try await Executables.run(
                "seed-server", ["init", "--database", url, "--schema", file.path, "--attach"])
            #expect(attached.status == 0, "\(attached.stderr)")
            #expect(attached.stdout.contains("their rows are revision 1"))
            let again = try await Executables.run(
                "seed-server", ["init", "--database", url, "--schema", file.path, "--attach"])
            #expect(again.status == 1)
            #expect(
                again.stderr.split(separator: "\n").count == 1
                    && again.stderr.contains("already holds a SeedSync store"), "\(again.stderr)")

            let venues = try TemporaryFile(
                named: "venues.ndjson", contents: #"{"code": "barn", "name": "Barn"}"# + "\n")
            let loaded = try await Executables.run(
                "seed-server", ["load", "--database", url, "--type", "venues", "--file", venues.path])
            #expect(loaded.status == 0, "\(loaded.stderr)")
            #expect(loaded.stdout.contains("loaded 1 rows into venues as revision 2"))
            try await psql(
                "UPDATE shows SET seats = 3; UPDATE shows SET seats = 4; UPDATE shows SET seats = 5", on: location)
            let compacted = try await Executables.run(
                "seed-server", ["compact", "--database", url, "--keep-revisions", "1"])
            #expect(compacted.status == 0, "\(compacted.stderr)")
            #expect(compacted.stdout.contains("removed 2 change sets; clients can sync from revision 4"))
        }
    }

    @Test func whatCannotWorkIsOneLineAndExitStatus1() async throws {
        let base = try TestPostgres.location()
        let cases: [([String], [String: String], String)] = [
            (
                ["serve", "--database", "postgres://seedsync@127.0.0.1:1/x", "--allow-anonymous"], [:],
                "connection refused"
            ),
            (["init", "--database", base.description, "--demo"], ["PGPASSWORD": "wrong"], "refused the login"),
            (
                [
                    "mutate", "--database", "postgres://\(base.username)@127.0.0.1:\(base.port)/nowhere", "--changes",
                    "1",
                ], [:], "has no database nowhere"
            ),
            (["init", "--database", "postgres://u:secret@127.0.0.1/x", "--demo"], [:], "must not hold a password"),
        ]
        for (arguments, environment, message) in cases {
            let result = try await Executables.run("seed-server", arguments, environment: environment)
            #expect(result.status == 1, "\(arguments)")
            #expect(
                result.stderr.split(separator: "\n").count == 1 && result.stderr.contains(message), "\(result.stderr)")
            #expect(!result.stderr.contains("secret") && !result.stderr.contains("wrong"))
        }
    }
}
