import Foundation
import SeedSyncPostgres

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A PostgreSQL server of a test's own, for faults no shared server may suffer: stopped and
/// started again under a running `seed-server`. Started by `scripts/lib/postgres.sh` (initdb in a
/// temporary folder, the `postgres` user when root, loopback, a free port).
///
/// ```swift
/// try await PrivatePostgres.with { postgres in
///     try await postgres.stop()
///     try await postgres.start()
/// }
/// ```
public final class PrivatePostgres: Sendable {
    public let location: PostgresLocation
    private let folder: String
    private let binaries: String
    private let port: Int

    private init(location: PostgresLocation, folder: String, binaries: String) {
        self.location = location
        self.folder = folder
        self.binaries = binaries
        self.port = location.port
    }

    /// Starts a server, runs `body`, and stops the server and removes its folder, also on failure.
    public static func with(_ body: @escaping @Sendable (PrivatePostgres) async throws -> Void) async throws {
        let output = try await shell(
            "source scripts/lib/setup.sh && source scripts/lib/postgres.sh && start_postgres && "
                + #"printf '%s\n' "$SEEDSYNC_POSTGRES_URL" "$PGPASSWORD" "$POSTGRES_DIR" "$PG_BIN""#)
        let lines = output.split(separator: "\n").map(String.init)
        guard lines.count == 4 else { throw TestSetupError("scripts/lib/postgres.sh printed no server: \(output)") }
        let postgres = PrivatePostgres(
            location: try PostgresLocation(url: lines[0], password: lines[1]), folder: lines[2], binaries: lines[3])
        do {
            try await body(postgres)
        } catch {
            await postgres.remove()
            throw error
        }
        await postgres.remove()
    }

    /// Stops the server with a fast shutdown (connections are ended) and waits until it is gone.
    public func stop() async throws {
        let script = """
            pid=$(head -n 1 '\(folder)/data/postmaster.pid') && kill -INT "$pid" && \
            while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
            """
        _ = try await Self.shell(script)
    }

    /// Starts the stopped server again, on the same port, and waits until it accepts connections.
    public func start() async throws {
        let script = """
            source scripts/lib/postgres.sh && PG_BIN='\(binaries)' POSTGRES_DIR='\(folder)' && run_postgres \(port) && \
            until '\(binaries)/pg_isready' -q -h 127.0.0.1 -p \(port); do sleep 0.05; done
            """
        _ = try await Self.shell(script)
    }

    /// Takes a base backup of the running server (`pg_basebackup`, its WAL streamed with it) into
    /// the server's folder under `name`: what an operator restores after losing the database.
    public func backUp(as name: String) async throws {
        let script = """
            source scripts/lib/postgres.sh && \
            as_postgres env PGPASSWORD="$(cat '\(folder)/password')" '\(binaries)/pg_basebackup' \
              -D '\(folder)/\(name)' -h 127.0.0.1 -p \(port) -U seedsync -X stream --checkpoint=fast
            """
        _ = try await Self.shell(script)
    }

    /// Stops the server, puts the base backup `name` (``backUp(as:)``) in place of its data, and
    /// starts it: the database as it was when the backup was taken, every later commit gone.
    public func restore(_ name: String) async throws {
        try await stop()
        _ = try await Self.shell(
            "rm -rf '\(folder)/data' && cp -a '\(folder)/\(name)' '\(folder)/data' && chmod 700 '\(folder)/data'")
        try await start()
    }

    private func remove() async {
        try? await stop()
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// Runs `script` with bash in the package's root folder and returns its standard output.
    ///
    /// Spawned without the test process's descriptors (``ChildProcess/spawnKeepingOutput(_:_:)``)
    /// and reaped with `waitpid` on a thread of its own: the server the script leaves running must
    /// not keep the wait from ending, nor other tests' sockets and pipes open.
    private static func shell(_ script: String) async throws -> String {
        let root = packageRoot.path
        return try await offPool {
            let output = FileManager.default.temporaryDirectory.appendingPathComponent(
                "seedsync-postgres-\(UUID().uuidString).out"
            ).path
            defer { try? FileManager.default.removeItem(atPath: output) }
            let command = "set -euo pipefail; cd '\(root)'; exec >'\(output)' </dev/null; " + script
            let pid = try ChildProcess.spawnKeepingOutput("/bin/bash", ["-c", command])
            var status: Int32 = 0
            while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
            guard status == 0 else { throw TestSetupError("a PostgreSQL helper failed (wait status \(status))") }
            return (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        }
    }

    /// The folder holding Package.swift: three levels above this file.
    private static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
}
