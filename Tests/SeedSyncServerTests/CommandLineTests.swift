import Foundation
import SeedSyncDemo
import SeedSyncModel
import SeedSyncSQLiteStore
import SeedSyncServer
import SeedSyncStore
import SeedSyncTesting
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The built `seed-server` executable, run as a user would.
@Suite struct CommandLineTests {
    @Test func initMutateCompactAndLoad() async throws {
        try await withTemporaryDirectory { directory in
            let database = directory.appendingPathComponent("server.sqlite").path
            let created = try await Executables.run(
                "seed-server",
                ["init", "--database", database, "--demo", "--events", "500", "--locations", "20", "--seed", "4"])
            #expect(created.status == 0, "\(created.stderr)")
            #expect(created.stdout.contains("500 events at revision 1"))

            let again = try await Executables.run("seed-server", ["init", "--database", database, "--demo"])
            #expect(again.status != 0)
            #expect(again.stderr.contains("already exists"))

            let mutated = try await Executables.run(
                "seed-server", ["mutate", "--database", database, "--changes", "50", "--seed", "4"])
            #expect(mutated.status == 0, "\(mutated.stderr)")
            #expect(mutated.stdout.contains("revisions 2 to 51"))

            let compacted = try await Executables.run(
                "seed-server", ["compact", "--database", database, "--keep-revisions", "10"])
            #expect(compacted.status == 0, "\(compacted.stderr)")
            #expect(compacted.stdout.contains("removed 40 change sets; clients can sync from revision 41"))

            let file = directory.appendingPathComponent("locations.ndjson")
            try #"{"id": 900, "name": "Pier", "city": "Oslo", "latitude": 59.9, "longitude": 10.7}"#.write(
                to: file, atomically: true, encoding: .utf8)
            let loaded = try await Executables.run(
                "seed-server", ["load", "--database", database, "--type", "locations", "--file", file.path])
            #expect(loaded.status == 0, "\(loaded.stderr)")
            #expect(loaded.stdout.contains("loaded 1 rows into locations as revision 52"))

            let badFlag = try await Executables.run("seed-server", ["init", "--database", database])
            #expect(badFlag.status == 64)
        }
    }

    /// `seed-server schema upgrade` and `schema versions` on an embedded store; a refused change is
    /// one line and exit status 1, and changes nothing.
    @Test func schemaUpgradeAndVersions() async throws {
        try await withTemporaryDirectory { directory in
            let database = directory.appendingPathComponent("server.sqlite").path
            let created = try await Executables.run(
                "seed-server", ["init", "--database", database, "--demo", "--events", "50", "--locations", "5"])
            #expect(created.status == 0, "\(created.stderr)")
            let schemaFile = directory.appendingPathComponent("v2.json")
            try JSONEncoder().encode(DemoDataset.schemaV2).write(to: schemaFile)
            let unstated = try await Executables.run(
                "seed-server", ["schema", "upgrade", "--database", database, "--schema", schemaFile.path])
            #expect(unstated.status == 1 && unstated.stderr.contains("events.title is dropped"), "\(unstated.stderr)")
            let upgraded = try await Executables.run(
                "seed-server",
                [
                    "schema", "upgrade", "--database", database, "--schema", schemaFile.path, "--rename",
                    "events.title=name",
                ])
            #expect(upgraded.status == 0, "\(upgraded.stderr)")
            #expect(
                upgraded.stdout.contains(
                    "schema version 2 from revision 1 on: events.title renamed to name, events.description dropped"))
            let versions = try await Executables.run("seed-server", ["schema", "versions", "--database", database])
            #expect(versions.status == 0, "\(versions.stderr)")
            #expect(
                versions.stdout
                    == "version 1: from revision 0, 2 types\nversion 2: from revision 1, 3 types renames: events.title=name\n"
            )
            let badRename = try await Executables.run(
                "seed-server",
                ["schema", "upgrade", "--database", database, "--schema", schemaFile.path, "--rename", "title=name"])
            #expect(badRename.status == 64)
            let noFile = try await Executables.run("seed-server", ["schema", "upgrade", "--database", database])
            #expect(noFile.status == 64 && noFile.stderr.contains("--schema FILE"))
        }
    }

    /// `seed-server seeds list|retire`, and `compact` saying which seed kept the history.
    @Test func seedsPinCompactionUntilRetired() async throws {
        try await withTemporaryDirectory { directory in
            let database = directory.appendingPathComponent("server.sqlite").path
            _ = try await Executables.run(
                "seed-server", ["init", "--database", database, "--demo", "--events", "50", "--locations", "5"])
            _ = try await Executables.run("seed-server", ["mutate", "--database", database, "--changes", "30"])
            let sha = String(repeating: "ab", count: 32)
            let store = try SQLiteSyncStore(path: database)
            _ = try await store.register(SeedRegistration(sha256: sha, revision: 10, schemaVersion: 1))
            try store.close()
            let listed = try await Executables.run("seed-server", ["seeds", "list", "--database", database])
            #expect(
                listed.stdout.contains("\(sha) revision 10 schema version 1")
                    && listed.stdout.contains("pins the history"))
            let compacted = try await Executables.run(
                "seed-server", ["compact", "--database", database, "--keep-revisions", "5"])
            #expect(
                compacted.stdout.contains(
                    "clients can sync from revision 10; kept back to revision 10 for the registered seed \(sha)"),
                "\(compacted.stdout)")
            let retired = try await Executables.run(
                "seed-server", ["seeds", "retire", "--database", database, "--sha256", sha])
            #expect(retired.status == 0 && retired.stdout.contains("retired the seed \(sha)"), "\(retired.stderr)")
            let unknown = try await Executables.run(
                "seed-server", ["seeds", "retire", "--database", database, "--sha256", "ff"])
            #expect(unknown.status == 1 && unknown.stderr.contains("no registered seed"))
            let free = try await Executables.run(
                "seed-server", ["compact", "--database", database, "--keep-revisions", "5"])
            #expect(free.stdout.contains("clients can sync from revision 26") && !free.stdout.contains("kept back"))
            let negative = try await Executables.run(
                "seed-server", ["compact", "--database", database, "--keep-revisions", "-5"])
            #expect(negative.status == 64 && negative.stderr.contains("--keep-revisions must not be negative"))
        }
    }

    /// `seed-server status`: the store's revision, compaction floor, versions and seeds, and with
    /// `--server` the live reads a running server holds; a token that is not an admin's is refused.
    @Test func statusShowsTheStoreAndWhatARunningServerHolds() async throws {
        try await withTemporaryDirectory { directory in
            let database = directory.appendingPathComponent("server.sqlite").path
            _ = try await Executables.run(
                "seed-server", ["init", "--database", database, "--demo", "--events", "50", "--locations", "5"])
            _ = try await Executables.run("seed-server", ["mutate", "--database", database, "--changes", "30"])
            let store = try SQLiteSyncStore(path: database)
            _ = try await store.register(
                SeedRegistration(sha256: String(repeating: "cd", count: 32), revision: 12, schemaVersion: 1))
            try store.close()
            _ = try await Executables.run("seed-server", ["compact", "--database", database, "--keep-revisions", "5"])
            let server = try Executables.start(
                "seed-server", ["serve", "--database", database, "--port", "0"],
                environment: ["SEED_SERVER_TOKENS": "status-read", "SEED_SERVER_ADMIN_TOKENS": "status-admin"])
            defer { if server.isRunning { server.terminate() } }
            let base = try #require(await Executables.listeningAddress(of: server))
            let held = (0..<2).map { _ in
                Task {
                    var request = URLRequest(
                        url: URL(string: "\(base)/v1/changes?after=31&schemaVersion=1&live=0")!, timeoutInterval: 60)
                    request.setValue("Bearer status-read", forHTTPHeaderField: "Authorization")
                    _ = try? await TestHTTP.data(for: request)
                }
            }
            defer { for task in held { task.cancel() } }
            try await LiveSyncTests.waitUntilHeld(2, on: URL(string: base)!, adminToken: "status-admin")

            let shown = try await Executables.run(
                "seed-server", ["status", "--database", database, "--server", base],
                environment: ["SEED_SERVER_ADMIN_TOKEN": "status-admin"])
            #expect(shown.status == 0, "\(shown.stderr)")
            for line in [
                "dataset demo, revision 31", "history from revision 12 (compaction floor), kept back to 12",
                "schema versions served: 1 (newest 1)", "registered seeds: 1 pinning the history, 0 retired",
                "2 live requests held, revision seen 31",
            ] {
                #expect(shown.stdout.contains(line), "\(line) in \(shown.stdout)")
            }
            #expect(!shown.stdout.contains("status-admin"), "the token is never printed")
            let json = try await Executables.run("seed-server", ["status", "--database", database, "--json"])
            let status = try JSONDecoder().decode(ServerStatus.self, from: Data(json.stdout.utf8))
            #expect(
                status.revision == 31 && status.minRevision == 12 && status.seeds.count == 1 && status.process == nil)
            // A token file read as `serve` reads its own (comments skipped); one that cannot be read is named.
            let tokenFile = directory.appendingPathComponent("admin-token").path
            try "# the admin token\nstatus-admin\n".write(toFile: tokenFile, atomically: true, encoding: .utf8)
            let fromFile = try await Executables.run(
                "seed-server", ["status", "--database", database, "--server", base, "--admin-token-file", tokenFile])
            #expect(fromFile.status == 0 && fromFile.stdout.contains("2 live requests held"), "\(fromFile.stderr)")
            let missing = directory.appendingPathComponent("no-such-token").path
            let unreadable = try await Executables.run(
                "seed-server", ["status", "--database", database, "--server", base, "--admin-token-file", missing])
            #expect(unreadable.status == 1 && unreadable.stderr.contains(missing), "\(unreadable.stderr)")
            // The server's own variable works too (a status run beside it).
            let beside = try await Executables.run(
                "seed-server", ["status", "--database", database, "--server", base],
                environment: ["SEED_SERVER_ADMIN_TOKENS": "status-admin,other"])
            #expect(beside.status == 0 && beside.stdout.contains("live requests held"), "\(beside.stderr)")
            let refused = try await Executables.run(
                "seed-server", ["status", "--database", database, "--server", base],
                environment: ["SEED_SERVER_ADMIN_TOKEN": "status-read"])
            #expect(
                refused.status == 1 && refused.stderr.contains("HTTP 403: give an admin token"), "\(refused.stderr)")
        }
    }

    @Test func schemaFilesCreateEmptyDatabases() async throws {
        try await withTemporaryDirectory { directory in
            let schemaFile = directory.appendingPathComponent("schema.json")
            try JSONEncoder().encode(Fixtures.catalogSchema).write(to: schemaFile)
            let database = directory.appendingPathComponent("catalog.sqlite").path
            let created = try await Executables.run(
                "seed-server", ["init", "--database", database, "--schema", schemaFile.path])
            #expect(created.status == 0, "\(created.stderr)")
            #expect(created.stdout.contains("dataset catalog, 2 types, revision 0"))

            try
                #"{"dataset": "x", "schemaVersion": 1, "types": [{"name": "Bad", "primaryKey": {"name": "id", "type": "integer"}, "fields": []}]}"#
                .write(to: schemaFile, atomically: true, encoding: .utf8)
            let invalid = try await Executables.run(
                "seed-server", ["init", "--database", database + "2", "--schema", schemaFile.path])
            #expect(invalid.status != 0)
            #expect(invalid.stderr.contains("type name 'Bad'"))
            #expect(!FileManager.default.fileExists(atPath: database + "2"))
        }
    }

    @Test func serveRefusesToStartWithoutTokens() async throws {
        try await withTemporaryDirectory { directory in
            let database = directory.appendingPathComponent("server.sqlite").path
            _ = try await Executables.run(
                "seed-server", ["init", "--database", database, "--demo", "--events", "10", "--locations", "2"])
            let refused = try await Executables.run("seed-server", ["serve", "--database", database, "--port", "0"])
            #expect(refused.status != 0)
            #expect(refused.stderr.contains("no token configured"))
            let missingFile = try await Executables.run(
                "seed-server",
                [
                    "serve", "--database", database, "--port", "0", "--token-file",
                    directory.appendingPathComponent("none").path,
                ])
            #expect(missingFile.status != 0)
            #expect(missingFile.stderr.contains("cannot read token file"))
            #expect(missingFile.stderr.contains("--token-file, --write-token-file"), "the command adds the hint")
            let missingDatabase = try await Executables.run(
                "seed-server", ["serve", "--database", database + ".none", "--port", "0"],
                environment: ["SEED_SERVER_TOKENS": "t"])
            #expect(missingDatabase.status != 0)
            #expect(missingDatabase.stderr.contains("no server database at"))
            #expect(missingDatabase.stderr.contains("create one with `seed-server init`"), "the command adds the hint")
            let noBlocks = try await Executables.run(
                "seed-server", ["serve", "--database", database, "--port", "0", "--changes-block-size", "0"],
                environment: ["SEED_SERVER_TOKENS": "t"])
            #expect(noBlocks.status != 0)
            #expect(noBlocks.stderr.contains("--changes-block-size must be positive"))
        }
    }

    @Test func serveListensOnAFreePortAndStopsOnSIGTERM() async throws {
        try await withTemporaryDirectory { directory in
            let database = directory.appendingPathComponent("server.sqlite").path
            _ = try await Executables.run(
                "seed-server", ["init", "--database", database, "--demo", "--events", "10", "--locations", "2"])
            let tokenFile = directory.appendingPathComponent("tokens")
            try "# read tokens\nfile-token\n".write(to: tokenFile, atomically: true, encoding: .utf8)
            let server = try Executables.start(
                "seed-server",
                [
                    "serve", "--database", database, "--port", "0", "--token-file", tokenFile.path, "--log-format",
                    "json",
                ],
                environment: ["SEED_SERVER_ADMIN_TOKENS": "env-admin"]
            )
            defer { if server.isRunning { server.terminate() } }
            let base = try #require(await Executables.listeningAddress(of: server))

            #expect(try await status(of: "\(base)/health") == 200)
            #expect(try await status(of: "\(base)/v1/schema") == 401)
            #expect(try await status(of: "\(base)/v1/schema", token: "file-token") == 200)
            #expect(try await status(of: "\(base)/v1/schema", token: "env-admin") == 200)
            #expect(try await status(of: "\(base)/metrics", token: "file-token") == 403)
            #expect(try await status(of: "\(base)/metrics", token: "env-admin") == 200)

            server.terminate()
            try await server.waitUntilExit()
            #expect(server.terminationReason == .exit)
            let log = String(
                decoding: (server.standardError as! Pipe).fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            #expect(!log.contains("file-token"))
            #expect(!log.contains("env-admin"))
            // --log-format json: every line one JSON object.
            let lines = log.split(separator: "\n").map {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
            #expect(!lines.isEmpty && lines.allSatisfy { $0?["level"] is String && $0?["time"] is String }, "\(log)")
            #expect(
                lines.contains {
                    $0?["message"] as? String == "GET /metrics 403"
                        && ($0?["metadata"] as? [String: Any])?["status"] as? String == "403"
                })
        }
    }

    private func status(of url: String, token: String? = nil) async throws -> Int {
        var request = URLRequest(url: URL(string: url)!, timeoutInterval: 10)
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        let (_, response) = try await TestHTTP.data(for: request)
        return response.statusCode
    }
}
