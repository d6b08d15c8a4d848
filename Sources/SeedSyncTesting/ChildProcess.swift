import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A child process started with `posix_spawn`, with the members of Foundation's `Process` the
/// tests use.
///
/// Foundation's `Process.run()` on Linux lists `/proc/self/fd` to close every descriptor in the
/// child and copies each entry's whole 256-byte name out of readdir's buffer, reading past its end:
/// the test process crashed there (SIGSEGV in `memmove`) once in about a dozen runs of the suite,
/// which starts hundreds of processes with thousands of descriptors open. This closes them with
/// `posix_spawn_file_actions_addclosefrom_np` instead (`POSIX_SPAWN_CLOEXEC_DEFAULT` on Apple
/// platforms). The child starts with standard input from `/dev/null`, its output and errors in
/// pipes, no signal blocked and every handler at its default, in a process group of its own (as
/// `Process` does).
public final class ChildProcess: @unchecked Sendable {
    public let processIdentifier: Int32
    /// The pipe the child writes its standard output to (a `Pipe`, typed as `Process`'s is).
    public let standardOutput: Any?
    /// The pipe the child writes its standard error to.
    public let standardError: Any?

    private let lock = NSLock()
    private var status: Int32?

    /// Starts `executable` (an absolute path) with `arguments` and exactly `environment`.
    init(executable: String, arguments: [String], environment: [String: String]) throws {
        let (output, errors) = (Pipe(), Pipe())
        processIdentifier = try Self.spawn(
            executable, [executable] + arguments, environment.map { "\($0.key)=\($0.value)" },
            output: output.fileHandleForWriting.fileDescriptor, errors: errors.fileHandleForWriting.fileDescriptor)
        output.fileHandleForWriting.closeFile()
        errors.fileHandleForWriting.closeFile()
        standardOutput = output
        standardError = errors
    }

    /// Whether the child has not exited yet.
    public var isRunning: Bool { reaped() == nil }

    /// Waits until the child has exited, blocking the calling thread (polling).
    ///
    /// Only for a thread of the test's own (``offPool(_:)``): in a task, await the other
    /// `waitUntilExit()`, which holds no thread while it waits.
    @available(*, noasync, message: "await waitUntilExit(): a blocked pool thread starves the in-process servers")
    public func waitUntilExit() {
        while reaped() == nil { usleep(5_000) }
    }

    /// Waits until the child has exited, sleeping between polls: the two threads of Swift's
    /// cooperative pool on a small CI machine also answer the servers the tests run in process.
    public func waitUntilExit() async throws {
        while reaped() == nil { try await Task.sleep(for: .milliseconds(5)) }
    }

    /// SIGTERM.
    public func terminate() {
        kill(processIdentifier, SIGTERM)
    }

    /// The exit code, or the signal that ended the child.
    public var terminationStatus: Int32 {
        let status = finishedStatus
        return Self.exited(status) ? (status >> 8) & 0xff : status & 0x7f
    }

    public var terminationReason: Process.TerminationReason {
        Self.exited(finishedStatus) ? .exit : .uncaughtSignal
    }

    private var finishedStatus: Int32 {
        guard let status = reaped() else { preconditionFailure("the process is still running") }
        return status
    }

    private static func exited(_ status: Int32) -> Bool { status & 0x7f == 0 }

    /// The child's wait status once it has exited (reaped once, kept).
    private func reaped() -> Int32? {
        lock.withLock {
            if status == nil {
                var raw: Int32 = 0
                if waitpid(processIdentifier, &raw, WNOHANG) == processIdentifier { status = raw }
            }
            return status
        }
    }

    /// Starts `path` with `arguments` and this process's environment, its standard input from
    /// `/dev/null`, its output and errors this process's own, and no other descriptor of this
    /// process; returns its process id, for the caller to reap (`waitpid`).
    ///
    /// For a helper that leaves a server running (``PrivatePostgres``): a plain `posix_spawn`
    /// hands it every descriptor the test process has open at that moment, and the server it
    /// starts then holds the other tests' sockets and pipes open for as long as it runs (their
    /// connections never see the test close them, their readers never see the end of a pipe).
    static func spawnKeepingOutput(_ path: String, _ arguments: [String]) throws -> pid_t {
        try spawn(
            path, [path] + arguments, ProcessInfo.processInfo.environment.map { "\($0.key)=\($0.value)" },
            output: nil, errors: nil)
    }

    /// `posix_spawn` with every descriptor above 2 closed; `output` and `errors`, when given,
    /// become the child's standard output and error (otherwise it keeps this process's).
    private static func spawn(
        _ path: String, _ arguments: [String], _ environment: [String], output: Int32?, errors: Int32?
    ) throws -> pid_t {
        #if canImport(Darwin)
        var actions: posix_spawn_file_actions_t?
        var attributes: posix_spawnattr_t?
        #else
        var actions = posix_spawn_file_actions_t()
        var attributes = posix_spawnattr_t()
        #endif
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        if let output { posix_spawn_file_actions_adddup2(&actions, output, 1) }
        if let errors { posix_spawn_file_actions_adddup2(&actions, errors, 2) }
        var flags = Int32(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF)
        #if canImport(Darwin)
        flags |= Int32(POSIX_SPAWN_CLOEXEC_DEFAULT)
        #else
        guard let closeFrom, closeFrom(&actions, 3) == 0 else {
            throw TestSetupError("cannot close the descriptors of \(path)'s child: glibc 2.34 or newer is needed")
        }
        #endif
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(flags))
        posix_spawnattr_setpgroup(&attributes, 0)

        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup($0) } + [nil]
        defer { for string in argv + envp { free(string) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, path, &actions, &attributes, argv, envp)
        guard result == 0 else { throw TestSetupError("cannot start \(path): \(String(cString: strerror(result)))") }
        return pid
    }

    #if !canImport(Darwin)
    /// glibc 2.34's `posix_spawn_file_actions_addclosefrom_np`, which Swift's Glibc module does not export.
    private static let closeFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? =
        {
            guard let symbol = dlsym(dlopen(nil, RTLD_NOW), "posix_spawn_file_actions_addclosefrom_np") else {
                return nil
            }
            return unsafeBitCast(
                symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
        }()
    #endif
}
