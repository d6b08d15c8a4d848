import Foundation
import Hummingbird
import SeedSyncClient
import SeedSyncDemo
import SeedSyncImport
import SeedSyncModel
import SeedSyncTesting
import Testing

/// The importer against a server that answers what a correct server never would. The first
/// `/v1/sync` answer is good (two change sets, `hasMore`), the second is the bad one: the database
/// must stay at the last good revision, seed + 2.
@Suite struct MisbehavingServerTests {
    enum Outcome: Sendable {
        case malformed, invalidChangeSet, tooLarge
    }

    /// A change set at revision `$R` (replaced by the next revision) of the demo schema.
    static func changeSet(_ types: String) -> String {
        #"{"maxRevision": $R, "hasMore": false, "changeSets": [{"revision": $R, "types": \#(types)}]}"#
    }

    static let location = #""name": "Hall", "city": "Oslo", "latitude": 59.9, "longitude": 10.7"#
    static let cases: [(String, String, Outcome)] = [
        ("malformed JSON", #"{"maxRevision": "#, .malformed),
        (
            "a revision gap",
            #"{"maxRevision": $R+1, "hasMore": false, "changeSets": [{"revision": $R+1, "types": []}]}"#, .malformed
        ),
        (
            "a revision going backwards",
            #"{"maxRevision": $R-1, "hasMore": false, "changeSets": [{"revision": $R-1, "types": []}]}"#, .malformed
        ),
        (
            "an unknown type",
            changeSet(#"["ghosts"], "ghosts": {"create": [1], "attributes": {"1": {"name": "Boo"}}}"#),
            .invalidChangeSet
        ),
        (
            "an unknown field",
            changeSet(
                #"["locations"], "locations": {"create": [9001], "attributes": {"9001": {\#(location), "colour": "red"}}}"#
            ), .invalidChangeSet
        ),
        (
            "a type name that looks like SQL",
            changeSet(#"["locations; DROP TABLE events; --"], "locations; DROP TABLE events; --": {"delete": [1]}"#),
            .invalidChangeSet
        ),
        (
            "a field name that looks like SQL",
            changeSet(
                #"["locations"], "locations": {"update": [1], "attributes": {"1": {\#(location), "name\" = 'x'; DROP TABLE events; --": 1}}}"#
            ), .invalidChangeSet
        ),
        (
            "a value of the wrong type",
            changeSet(
                #"["locations"], "locations": {"create": [9001], "attributes": {"9001": {"name": "Hall", "city": "Oslo", "latitude": "north", "longitude": 10.7}}}"#
            ), .invalidChangeSet
        ),
        (
            "a missing non-null field",
            changeSet(
                #"["locations"], "locations": {"create": [9001], "attributes": {"9001": {"city": "Oslo", "latitude": 59.9, "longitude": 10.7}}}"#
            ), .invalidChangeSet
        ),
        (
            "an oversized body",
            #"{"maxRevision": $R, "hasMore": false, "changeSets": [], "padding": "\#(String(repeating: "x", count: 300_000))"}"#,
            .tooLarge
        ),
    ]

    @Test(arguments: cases.map(\.0))
    func aBadAnswerStopsTheSyncAtTheLastGoodRevision(_ name: String) async throws {
        let (_, body, outcome) = Self.cases.first { $0.0 == name }!
        try await withImportFixture(changesAfter: 10) { fixture in
            let good = try await fixture.served.client().sync(from: fixture.seedRevision, limit: 2)
            let bad = body.withRevision(fixture.seedRevision + 3)
            let stub = StubAnswers([.json(good, hasMore: true), .text(bad), .json(good, hasMore: true), .text(bad)])
            try await Self.serve(fixture, stub) { importer in
                await #expect { try await importer.run() } throws: { error in
                    switch outcome {
                    case .malformed: (error as? SyncClientError)?.code == .malformedResponse
                    case .tooLarge: (error as? SyncClientError)?.code == .responseTooLarge
                    case .invalidChangeSet: (error as? ImportError)?.code == .invalidChangeSet
                    }
                }
            }
            #expect(try revision(of: fixture.database) == fixture.seedRevision + 2)
            let rows = try contents(ofSeed: fixture.database)
            #expect(rows["events"]?.isEmpty == false && rows["locations"]?.isEmpty == false)
        }
    }

    /// Change sets are checked as answers are read, ahead of the writes: the good change sets of
    /// the answers before, and of the same answer before the bad one, are still applied.
    @Test func aBadChangeSetInsideAnAnswerKeepsTheOnesBeforeIt() async throws {
        try await withImportFixture(changesAfter: 10) { fixture in
            let client = fixture.served.client()
            let first = try await client.sync(from: fixture.seedRevision, limit: 2)
            let second = try await client.sync(from: fixture.seedRevision + 2, limit: 2)
            let bad = #"{"revision": $R, "types": ["ghosts"], "ghosts": {"delete": [1]}}"#
            let good = second.changeSets.map { String(decoding: $0.jsonBytes(), as: UTF8.self) }
            let body =
                #"{"maxRevision": $R, "hasMore": false, "changeSets": [\#((good + [bad]).joined(separator: ","))]}"#
            let stub = StubAnswers([.json(first, hasMore: true), .text(body.withRevision(fixture.seedRevision + 5))])
            try await Self.serve(fixture, stub) { importer in
                await #expect { try await importer.run() } throws: { error in
                    (error as? ImportError)?.code == .invalidChangeSet && "\(error)".contains("ghosts")
                }
            }
            #expect(try revision(of: fixture.database) == fixture.seedRevision + 4)
        }
    }

    @Test func a500IsRetriedThenTheSyncGoesOn() async throws {
        try await withImportFixture(changesAfter: 10) { fixture in
            let feed = try await fixture.served.client().sync(from: fixture.seedRevision, limit: 1000)
            let stub = StubAnswers([.status(.internalServerError), .json(feed, hasMore: false)])
            let collected = Locked<[ImportEvent]>([])
            try await Self.serve(fixture, stub, retry: RetryPolicy(maxAttempts: 3, baseDelay: 0.01)) { importer in
                for try await event in importer.events() { collected.update { $0.append(event) } }
            }
            let events = collected.value
            #expect(events.contains { if case .retrying(attempt: 1, _, _) = $0 { true } else { false } })
            #expect(try revision(of: fixture.database) == feed.maxRevision)
            #expect(try contents(ofSeed: fixture.database) == (try await fixture.serverContents()))
        }
    }

    @Test func a401StopsTheSyncAtTheSeed() async throws {
        try await withImportFixture(changesAfter: 10) { fixture in
            let stub = StubAnswers([.status(.unauthorized)])
            try await Self.serve(fixture, stub, retry: RetryPolicy(maxAttempts: 3, baseDelay: 0.01)) { importer in
                await #expect { try await importer.run() } throws: { ($0 as? SyncClientError)?.code == .unauthorized }
            }
            #expect(stub.requests == 1)
            #expect(try revision(of: fixture.database) == fixture.seedRevision)
        }
    }

    /// Deleting a location that events still point at: the batch fails when it commits. A
    /// transaction held across the answers fails whole: the catch-up reads again from the
    /// database's revision in transactions of its own, which keep the good change sets and stop at
    /// the bad one (the stub answers the same two answers again).
    @Test func aDanglingReferenceStopsTheSync() async throws {
        try await withImportFixture(changesAfter: 10) { fixture in
            let events = try #require(try contents(ofSeed: fixture.seed)["events"])
            let column = DemoDataset.schema.type(named: "events")!.columnNames.firstIndex(of: "location_id")!
            let referenced = try #require(events.lazy.map { $0[column] }.first { $0 != .null })
            let good = try await fixture.served.client().sync(from: fixture.seedRevision, limit: 2)
            let body = Self.changeSet(#"["locations"], "locations": {"delete": [\#(referenced.keyString!)]}"#)
            let bad = body.withRevision(fixture.seedRevision + 3)
            let stub = StubAnswers([.json(good, hasMore: true), .text(bad), .json(good, hasMore: true), .text(bad)])
            try await Self.serve(fixture, stub) { importer in
                await #expect { try await importer.run() } throws: { error in
                    (error as? ImportError)?.code == .invalidChangeSet && "\(error)".contains("missing row")
                }
            }
            #expect(try revision(of: fixture.database) == fixture.seedRevision + 2)
        }
    }

    @Test func a409LeavesTheDatabaseUntouched() async throws {
        try await withImportFixture(changesAfter: 10) { fixture in
            let stub = StubAnswers([.error(.conflict, code: "revision_ahead")])
            try await Self.serve(fixture, stub) { importer in
                await #expect { try await importer.run() } throws: { error in
                    (error as? ImportError)?.code == .revisionAhead && "\(error)".contains("has not reached")
                }
            }
            #expect(try revision(of: fixture.database) == fixture.seedRevision)
            #expect(try contents(ofSeed: fixture.database) == (try contents(ofSeed: fixture.seed)))
        }
    }

    /// A server whose history keeps expiring under the importer: two recoveries from the seed,
    /// then the third 410 ends the run instead of looping, with the database at the seed.
    @Test func aHistoryThatKeepsExpiringStopsAfterTwoRecoveries() async throws {
        try await withImportFixture(changesAfter: 10) { fixture in
            let stub = StubAnswers([.historyExpired(minRevision: fixture.seedRevision)])
            let collected = Locked<[ImportEvent]>([])
            try await Self.serve(fixture, stub) { importer in
                await #expect {
                    for try await event in importer.events() { collected.update { $0.append(event) } }
                } throws: { ($0 as? SyncClientError)?.code == .historyExpired }
            }
            let replacements = collected.value.compactMap {
                if case .replaced(let replacement) = $0 { replacement } else { nil }
            }
            #expect(stub.requests == 3)
            #expect(replacements.map(\.reason) == [.historyExpired, .historyExpired])
            #expect(replacements.allSatisfy { $0.source == .seed })
            #expect(try revision(of: fixture.database) == fixture.seedRevision)
            #expect(try contents(ofSeed: fixture.database) == (try contents(ofSeed: fixture.seed)))
        }
    }

    /// Serves the real schema and the stub's `/v1/sync` answers; `body` gets an importer of it.
    static func serve(
        _ fixture: ImportFixture, _ stub: StubAnswers, retry: RetryPolicy = .none,
        _ body: @escaping @Sendable (SeedImporter) async throws -> Void
    ) async throws {
        let schema = try await fixture.served.client().schema()
        let router = Router()
        router.get("v1/schema") { _, _ in try Self.response(.ok, JSONEncoder().encode(schema)) }
        router.post("v1/sync") { _, _ in try stub.next() }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await app.test(.live) { client in
            let importer = SeedImporter(
                configuration: .init(
                    seed: fixture.seed, database: fixture.database,
                    server: .init(
                        serverURL: URL(string: "http://127.0.0.1:\(client.port!)")!, token: nil, requestTimeout: 5,
                        maxResponseSize: 256 << 10, retry: retry),
                    // The stub's answers follow one another: no commit on the way, however slow the machine.
                    maxSecondsPerCommit: 600
                ))
            try await body(importer)
        }
    }

    static func response(_ status: HTTPResponse.Status, _ data: Data) -> Response {
        Response(
            status: status, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}

/// `/v1/sync` answers in order; the last one repeats.
final class StubAnswers: @unchecked Sendable {
    enum Answer {
        case json(SyncResponse, hasMore: Bool)
        case text(String)
        case status(HTTPResponse.Status)
        case error(HTTPResponse.Status, code: String)
        case historyExpired(minRevision: Int64)
    }

    private let lock = NSLock()
    private var answers: [Answer]
    private var count = 0

    init(_ answers: [Answer]) {
        self.answers = answers
    }

    var requests: Int { lock.withLock { count } }

    func next() throws -> Response {
        let answer = lock.withLock {
            count += 1
            return answers.count > 1 ? answers.removeFirst() : answers[0]
        }
        switch answer {
        case .json(var feed, let hasMore):
            feed.hasMore = hasMore
            return MisbehavingServerTests.response(.ok, try JSONEncoder().encode(feed))
        case .text(let text):
            return MisbehavingServerTests.response(.ok, Data(text.utf8))
        case .status(let status):
            return MisbehavingServerTests.response(
                status, Data(#"{"error": {"code": "stub", "message": "stub"}}"#.utf8))
        case .error(let status, let code):
            return MisbehavingServerTests.response(
                status, Data(#"{"error": {"code": "\#(code)", "message": "stub"}}"#.utf8))
        case .historyExpired(let minRevision):
            return MisbehavingServerTests.response(
                .gone,
                Data(#"{"error": {"code": "history_expired", "message": "stub", "minRevision": \#(minRevision)}}"#.utf8)
            )
        }
    }
}

extension String {
    /// Replaces `$R+1`, `$R-1` and `$R` with the revisions they name.
    func withRevision(_ revision: Int64) -> String {
        replacingOccurrences(of: "$R+1", with: String(revision + 1))
            .replacingOccurrences(of: "$R-1", with: String(revision - 1))
            .replacingOccurrences(of: "$R", with: String(revision))
    }
}
