import Foundation

/// Runs the package's built executables, as swift-argument-parser's example tests do.
public enum Executables {
    /// The folder with the built products (`.build/debug`), found from the running test bundle.
    public static var productsDirectory: URL {
        let executable = Bundle.main.executableURL ?? URL(fileURLWithPath: CommandLine.arguments[0])
        var directory = executable.deletingLastPathComponent()
        while directory.path != "/" {
            if FileManager.default.isExecutableFile(atPath: directory.appendingPathComponent("seed-server").path) {
                return directory
            }
            directory.deleteLastPathComponent()
        }
        return executable.deletingLastPathComponent()
    }

    /// The outcome of a finished command.
    public struct Result: Sendable {
        public var status: Int32
        /// Everything the command wrote to its standard output.
        public var output: Data
        public var stderr: String

        /// The standard output as text.
        public var stdout: String { String(decoding: output, as: UTF8.self) }
    }

    /// Runs `name arguments…` (a product, or an absolute path) to completion and returns its
    /// status and output.
    ///
    /// The wait happens on a thread of its own (see ``offPool(_:)``): a child that talks to a server
    /// running inside the test process must not hold one of the pool's threads while it waits.
    ///
    /// - Parameter fileSizeLimitKiB: runs the command under `ulimit -f` (in KiB), through bash.
    public static func run(
        _ name: String, _ arguments: [String], environment: [String: String] = [:], fileSizeLimitKiB: Int? = nil
    ) async throws -> Result {
        try await TestTrace.step("child process \(name) \(arguments.prefix(3).joined(separator: " "))") {
            try await offPool {
                try runBlocking(name, arguments, environment: environment, fileSizeLimitKiB: fileSizeLimitKiB)
            }
        }
    }

    /// ``run(_:_:environment:fileSizeLimitKiB:)`` on the calling thread, for code that is not in a task.
    @available(*, noasync, message: "await run(): a blocked pool thread starves the in-process servers")
    public static func runBlocking(
        _ name: String, _ arguments: [String], environment: [String: String] = [:], fileSizeLimitKiB: Int? = nil
    ) throws -> Result {
        let process =
            if let limit = fileSizeLimitKiB {
                try start(
                    "/bin/bash",
                    [
                        "-c", "ulimit -f \(limit) && exec \"$0\" \"$@\"",
                        productsDirectory.appendingPathComponent(name).path,
                    ] + arguments, environment: environment)
            } else {
                try start(name, arguments, environment: environment)
            }
        // Both pipes read at once: a child that fills one while the other is read to its end would wait forever.
        let errors = ReadToEnd((process.standardError as! Pipe).fileHandleForReading)
        let output = (process.standardOutput as! Pipe).fileHandleForReading.readDataToEndOfFile()
        let stderr = errors.data()
        process.waitUntilExit()
        return Result(
            status: process.terminationStatus, output: output, stderr: String(decoding: stderr, as: UTF8.self))
    }

    /// Starts `name arguments…` (a product, or an absolute path) with piped output; the caller
    /// waits for or terminates it. Its environment is the test process's without `SEED_*`
    /// variables, plus `environment`.
    public static func start(_ name: String, _ arguments: [String], environment: [String: String] = [:]) throws
        -> ChildProcess
    {
        try ChildProcess(
            executable: name.hasPrefix("/") ? name : productsDirectory.appendingPathComponent(name).path,
            arguments: arguments,
            environment: ProcessInfo.processInfo.environment
                .filter { !$0.key.hasPrefix("SEED_") }
                .merging(environment) { $1 })
    }

    /// The `http://host:port` from a `seed-server serve --port 0` process's "listening on" line,
    /// read within 30 seconds (on a thread of its own).
    public static func listeningAddress(of server: ChildProcess) async -> String? {
        try? await offPool { readListeningAddress(of: server) }
    }

    private static func readListeningAddress(of server: ChildProcess) -> String? {
        let output = (server.standardOutput as! Pipe).fileHandleForReading
        let deadline = Date().addingTimeInterval(30)
        var text = ""
        while Date() < deadline, server.isRunning {
            let data = output.availableData
            if data.isEmpty { break }
            text += String(decoding: data, as: UTF8.self)
            if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("listening on ") }) {
                return String(line.dropFirst("listening on ".count))
            }
        }
        return nil
    }
}

/// Runs blocking work (waiting for a child process, reading a pipe, sleeping) on a thread of its
/// own and awaits its result.
///
/// Swift's cooperative pool has one thread per core, two on a small CI machine, and the servers
/// that tests run in process answer on that pool: a test that blocks a pool thread while a child
/// process waits for such a server can starve it.
public func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}

/// A pipe read to its end on a thread of its own.
private final class ReadToEnd: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private var read = Data()

    init(_ handle: FileHandle) {
        Thread {
            self.read = handle.readDataToEndOfFile()
            self.done.signal()
        }.start()
    }

    /// Everything read, once the writer has closed the pipe.
    func data() -> Data {
        done.wait()
        return read
    }
}
