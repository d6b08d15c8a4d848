import ArgumentParser
import Foundation
import SeedSyncModel
import SeedSyncSQLiteStore

/// What the history chain costs an SQLite store (`docs/PROTOCOL.md` §11), measured on a server
/// database whose chain was never computed: the first read of the chain over the whole log (read,
/// hash and store every revision, what each commit costs once, at its first read) against reading
/// the same log alone, then the chain values of one answer of 1,000 revisions against reading those
/// change sets (what every answer costs). Each read is by a fresh store, so no cache helps it.
struct ChainCost: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "chain",
        abstract:
            "Times an SQLite store's history chain: computed over the whole log, and read per answer; prints {changeSets, logSeconds, chainSeconds, perChangeSetMicros, answerLookupMs, answerReadMs}."
    )

    @Option(help: "A seed-server SQLite database whose history chain was never computed (a copy: it is written).")
    var database: String
    @Option(help: "Answers of 1,000 revisions to time.") var answers = 200

    func run() async throws {
        let chained = try SQLiteSyncStore(path: database)
        let (newest, start) = try await chained.revisions()
        let chainSeconds = try await Self.seconds { _ = try await chained.historyChains(from: newest, through: newest) }
        try chained.close()

        let store = try SQLiteSyncStore(path: database)
        defer { try? store.close() }
        var changeSets = 0
        let logSeconds = try await Self.seconds {
            var after = start
            while after < newest {
                let feed = try await store.changeFeed(after: after, limit: 1_000, byteBudget: 16 << 20, version: nil)
                changeSets += feed.changeSets.count
                after = feed.maxRevision
            }
        }
        var generator = SystemRandomNumberGenerator()
        var lookups: [Double] = []
        var reads: [Double] = []
        guard newest - start >= 1_000 else {
            throw ValidationError("\(database) logs \(newest - start) revisions: at least 1,000 are needed")
        }
        for _ in 0..<answers {
            let first = Int64.random(in: start...(newest - 1_000), using: &generator)
            reads.append(
                try await Self.seconds {
                    _ = try await store.changeFeed(after: first, limit: 1_000, byteBudget: 16 << 20, version: nil)
                })
            lookups.append(
                try await Self.seconds { _ = try await store.historyChains(from: first + 1, through: first + 1_000) })
        }
        let object: [String: JSONValue] = [
            "changeSets": .int(Int64(changeSets)), "logSeconds": .double(logSeconds),
            "chainSeconds": .double(chainSeconds),
            "perChangeSetMicros": .double(max(0, chainSeconds - logSeconds) / Double(max(changeSets, 1)) * 1e6),
            "answerLookupMs": .double(Self.median(lookups) * 1e3), "answerReadMs": .double(Self.median(reads) * 1e3),
        ]
        print(String(decoding: try JSONEncoder.stable().encode(JSONValue.object(object)), as: UTF8.self))
    }

    static func seconds(_ body: () async throws -> Void) async throws -> Double {
        let started = ContinuousClock.now
        try await body()
        let elapsed = ContinuousClock.now - started
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    static func median(_ values: [Double]) -> Double {
        values.isEmpty ? 0 : values.sorted()[values.count / 2]
    }
}
