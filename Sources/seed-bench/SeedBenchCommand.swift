import ArgumentParser
import Foundation
import GRDB
import SeedSyncCLI
import SeedSyncClient
import SeedSyncImport
import SeedSyncModel

/// Measures the app side of SeedSync, for `scripts/bench/bench.sh` and `scripts/bench/load.sh`: a ``SyncEngine``
/// over a real server, timed from the outside of the engine's public API, as an app sees it.
/// Prints JSON; the scripts compare and record the figures (`docs/PERFORMANCE.md`).
@main
struct SeedBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "seed-bench",
        abstract: "Times a SyncEngine as an app sees it (for scripts/bench/bench.sh and scripts/bench/load.sh).",
        subcommands: [EditLatency.self, ObserveLatency.self, PushLatency.self, ChainCost.self])
}

/// What every measurement needs: the engine's seed, database and server.
struct EngineOptions: ParsableArguments {
    @Option(help: "The seed file.") var seed: String
    @Option(help: "The app database (installed from the seed when missing).") var database: String
    @OptionGroup var connection: ServerOptions
    @Flag(help: "Write through a GRDB DatabasePool of the app's own (the database must exist).") var appPool = false

    /// An engine over these options, with `onEvent`.
    func engine(onEvent: @escaping @Sendable (ImportEvent) -> Void = { _ in }) throws -> SyncEngine {
        let client = try connection.client()
        let configuration = SeedImporter.Configuration(seed: seed, database: database, server: client)
        guard appPool else { return SyncEngine(configuration: configuration, onEvent: onEvent) }
        return SyncEngine(configuration: configuration, database: try DatabasePool(path: database), onEvent: onEvent)
    }
}

/// The time `beginEdit()` takes to return while the engine catches up: an edit session every
/// `--every` milliseconds, held for `--hold` milliseconds and cancelled, until the engine is caught
/// up (``SyncEngine/State/waiting``).
struct EditLatency: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "edit",
        abstract: "Times beginEdit() during a catch-up; prints {edits, p50Ms, p99Ms, maxMs, seconds, changeSets}.")

    @OptionGroup var engine: EngineOptions
    @Option(help: "Milliseconds between the starts of two edit sessions.") var every: Int = 250
    @Option(help: "Milliseconds an edit session stays open.") var hold: Int = 20

    func run() async throws {
        let applied = Counter()
        let engine = try engine.engine { event in
            if case .applied = event { applied.add() }
        }
        let states = engine.states()
        let started = ContinuousClock.now
        await engine.start()
        let edits = Task { try await Self.edit(engine, every: every, hold: hold) }
        for await state in states {
            if case .waiting = state { break }
            if case .failed(let error) = state { throw error }
        }
        let seconds = (ContinuousClock.now - started) / .seconds(1)
        edits.cancel()
        let durations = try await edits.value
        await engine.stop()
        print(Report(durations, extra: ["seconds": .double(seconds), "changeSets": .int(Int64(applied.value))]).json)
    }

    /// Edit sessions until cancelled: how long each `beginEdit()` took, in milliseconds.
    static func edit(_ engine: SyncEngine, every: Int, hold: Int) async throws -> [Double] {
        var durations: [Double] = []
        while !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(every - hold))
            let begun = ContinuousClock.now
            let edit = await engine.beginEdit()
            durations.append((ContinuousClock.now - begun) / .milliseconds(1))
            try? await Task.sleep(for: .milliseconds(hold))
            await edit.cancel()
        }
        return durations
    }
}

/// Commit to observer: once the engine is caught up it prints `{"ready": true}`, then a line per
/// key that `observe(type:)` reports inserted, with the wall-clock time it arrived
/// (`{"key": K, "at": unix seconds}`), until SIGTERM. The writer (`scripts/bench/live_latency.py`)
/// notes the time just before each commit and takes the difference.
struct ObserveLatency: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "observe",
        abstract: "Prints a line per inserted key of --type as the engine's observer sees it, until SIGTERM.")

    @OptionGroup var engine: EngineOptions
    @Option(help: "The type to observe.") var type: String = "locations"

    func run() async throws {
        let engine = try engine.engine()
        let changes = await engine.observe(type: type)
        let states = engine.states()
        signal(SIGTERM, SIG_IGN)
        let stop = DispatchSource.makeSignalSource(signal: SIGTERM)
        stop.setEventHandler { Task { await engine.stop() } }
        stop.resume()
        defer { stop.cancel() }
        await engine.start()
        let ready = Task {
            for await state in states {
                if case .waiting = state { return Self.write(["ready": .bool(true)]) }
                if case .failed(let error) = state { return Self.write(["failed": .string("\(error)")]) }
            }
        }
        for await change in changes {
            let at = Date().timeIntervalSince1970
            for key in change.inserted { Self.write(["key": key, "at": .double(at)]) }
        }
        ready.cancel()
    }

    static func write(_ object: [String: JSONValue]) {
        let line = (try? JSONEncoder.stable().encode(JSONValue.object(object))) ?? Data()
        FileHandle.standardOutput.write(line + Data("\n".utf8))
    }
}

/// Commit to server: once the engine is caught up, `--edits` local edits one after another, each a
/// new row of `--type`, timed from the call of `write` to the engine's ``ImportEvent/pushed(id:revision:keys:)``
/// for it (the server applied it). The token must be a write token.
struct PushLatency: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "push",
        abstract: "Times write() to the server's applied answer; prints {edits, p50Ms, p99Ms, maxMs}.")

    @OptionGroup var engine: EngineOptions
    @Option(help: "The type each edit creates a row of.") var type: String = "locations"
    @Option(help: "The new row's fields, as a JSON object.")
    var row = #"{"name": "Bench hall", "city": "Lyon", "latitude": 45.7, "longitude": 4.8}"#
    @Option(help: "How many edits.") var edits: Int = 50

    func run() async throws {
        guard case .object(let fields) = try JSONParser.parse(Array(row.utf8)) else {
            throw ValidationError("--row must be a JSON object")
        }
        let (pushed, arrivals) = AsyncStream.makeStream(of: String.self)
        let engine = try engine.engine { event in
            if case .pushed(let id, _, _) = event { arrivals.yield(id) }
        }
        let states = engine.states()
        await engine.start()
        for await state in states {
            if case .waiting = state { break }
            if case .failed(let error) = state { throw error }
        }
        var durations: [Double] = []
        var ids = pushed.makeAsyncIterator()
        for _ in 0..<edits {
            let started = ContinuousClock.now
            let id = try await engine.write { [type] changes in
                try changes.create(type, fields)
                return changes.id
            }
            while let arrived = await ids.next(), arrived != id {}
            durations.append((ContinuousClock.now - started) / .milliseconds(1))
        }
        await engine.stop()
        print(Report(durations, extra: [:]).json)
    }
}

/// Milliseconds, summarised: count, p50, p99 and max.
struct Report {
    let json: String

    init(_ milliseconds: [Double], extra: [String: JSONValue]) {
        let sorted = milliseconds.sorted()
        func percentile(_ p: Double) -> Double {
            sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int((p * Double(sorted.count)).rounded(.up)) - 1)]
        }
        var object = extra
        object["edits"] = .int(Int64(sorted.count))
        object["p50Ms"] = .double(percentile(0.50))
        object["p99Ms"] = .double(percentile(0.99))
        object["maxMs"] = .double(sorted.last ?? 0)
        object["allMs"] = .array(milliseconds.map { .double(($0 * 10).rounded() / 10) })
        json = String(decoding: (try? JSONEncoder.stable().encode(JSONValue.object(object))) ?? Data(), as: UTF8.self)
    }
}

/// A count shared with the engine's event handler.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    var value: Int { lock.withLock { count } }
    func add() { lock.withLock { count += 1 } }
}
