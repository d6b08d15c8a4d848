import Foundation
import GRDB
import NIOConcurrencyHelpers
import SeedSyncBuild
import SeedSyncClient
import SeedSyncDemo
import SeedSyncModel
import SeedSyncSeed
import SeedSyncTesting
import Testing

/// `SeedBuilder` against a real server on loopback.
@Suite struct SeedBuilderTests {
    /// A cut seed's file is named by its scope value: letters, digits, `-` and `_` as they are,
    /// anything else of a text value as `%XX` of its UTF-8 bytes, so no value escapes the folder.
    @Test func aScopeSeedIsNamedByItsValueAndStaysInItsFolder() throws {
        let builder = SeedBuilder(
            client: SyncClient(configuration: .init(serverURL: URL(string: "http://127.0.0.1:1")!, token: nil)),
            options: .init(output: "seeds/clubs.sqlite"))
        let team = ScopeDeclaration(name: "team", type: .integer)
        let code = ScopeDeclaration(name: "org", type: .text)
        #expect(builder.output(forScope: team, value: 42) == "seeds/clubs.team-42.sqlite")
        #expect(builder.output(forScope: team, value: -7) == "seeds/clubs.team--7.sqlite")
        #expect(builder.output(forScope: code, value: "acme_eu-1") == "seeds/clubs.org-acme_eu-1.sqlite")
        #expect(builder.output(forScope: code, value: "../x y") == "seeds/clubs.org-%2E%2E%2Fx%20y.sqlite")
        #expect(builder.output(forScope: code, value: "é") == "seeds/clubs.org-%C3%A9.sqlite")
    }

    @Test func buildEqualsTheServerRowByRow() async throws {
        try await withServedStore { served in
            let report = try await served.builder("out/demo.sqlite").build()
            let info = try await served.store.schemaInfo()
            #expect(report.manifest.revision == info.revision)
            #expect(report.startRevision == info.revision)
            #expect(report.changeSets == 0)
            #expect(report.pages == report.manifest.rowCounts.values.map { max(1, ($0 + 49) / 50) }.reduce(0, +))
            #expect(report.bytesDownloaded > Int64(report.manifest.size) / 4)
            #expect(try contents(ofSeed: report.output) == (try await Fixtures.contents(of: served.store)))
            #expect(report.manifest.rowCounts == (try await served.store.schemaInfo().rowCounts))
            #expect(try sha256(of: report.output) == report.manifest.sha256)
            let verified = try await SeedVerifier.verify(report.output)
            #expect(verified.passed, "\(verified.failures)")
            let files = try FileManager.default.contentsOfDirectory(atPath: served.path("out")).sorted()
            #expect(files == ["demo.sqlite", "demo.sqlite.manifest.json"])
        }
    }

    /// The seed's anchor: the server's chain at its revision, in its metadata and its manifest; a
    /// manifest that names another chain fails verification.
    @Test func theSeedAndItsManifestCarryTheServersChainAtItsRevision() async throws {
        try await withServedStore { served in
            let report = try await served.builder("anchored.sqlite", pageSize: 40).build()
            let revision = report.manifest.revision
            let chain = try await served.store.historyChains(from: revision, through: revision)[revision]
            #expect(chain != nil)
            #expect(try SeedFile.read(report.output) { try $0.metadata().chain } == chain)
            #expect(report.manifest.historyChain == chain)
            var other = report.manifest
            other.historyChain = HistoryChain(bytes: Array(repeating: 1, count: 32))
            try JSONEncoder.stable().encode(other).write(
                to: URL(fileURLWithPath: SeedManifest.path(forSeed: report.output)))
            let verified = try await SeedVerifier.verify(report.output)
            #expect(!verified.passed)
            #expect("\(verified.failures)".contains("history chain"))
        }
    }

    @Test func everyFieldTypeAndTextKeysSurvive() async throws {
        try await withServedStore(schema: Fixtures.catalogSchema, changes: 60) { served in
            let report = try await served.builder("catalog.sqlite", pageSize: 3, gzip: true).build()
            #expect(try contents(ofSeed: report.output) == (try await Fixtures.contents(of: served.store)))
            let verified = try await SeedVerifier.verify(report.output + ".gz")
            #expect(verified.passed, "\(verified.failures)")
        }
    }

    /// `--gzip-level`: the manifest records the level, a rebuild at the same level writes the same
    /// `.gz` bytes, another level other bytes (level 9 no larger than level 1), and every copy
    /// verifies; a build that does not say one compresses at 6.
    @Test func theGzipLevelIsRecordedAndARebuildAtItIsByteForByteTheSame() async throws {
        try await withServedStore(events: 400) { served in
            func build(_ name: String, level: Int) async throws -> SeedManifest.Compressed {
                let options = SeedBuilder.Options(
                    output: served.path(name), pageSize: 500, gzip: true, gzipLevel: level)
                let report = try await SeedBuilder(client: served.client(), options: options).build()
                #expect(try await SeedVerifier.verify(report.output + ".gz").passed)
                return try #require(report.manifest.gzip)
            }
            let (fast, again, small) = (
                try await build("fast.sqlite", level: 1), try await build("again.sqlite", level: 1),
                try await build("small.sqlite", level: 9)
            )
            #expect(fast.level == 1 && small.level == 9)
            #expect(fast.sha256 == again.sha256, "the same seed at the same level")
            #expect(fast.sha256 != small.sha256 && small.size <= fast.size)
            let unsaid = try await served.builder("default.sqlite", pageSize: 500, gzip: true).build()
            #expect(unsaid.manifest.gzip?.level == 6)
        }
    }

    @Test func aServerChangingBetweenPagesIsCaughtUp() async throws {
        try await withServedStore { served in
            let mutations = NIOLockedValueBox<UInt64>(100)
            let report = try await served.builder("moving.sqlite", pageSize: 40).build { event in
                guard case .page = event else { return }
                try await ChangeGenerator.mutate(
                    served.store, changes: 3,
                    seed: mutations.withLockedValue {
                        $0 += 1
                        return $0
                    })
            }
            let info = try await served.store.schemaInfo()
            #expect(report.changeSets > 0)
            #expect(report.manifest.revision == info.revision)
            #expect(try contents(ofSeed: report.output) == (try await Fixtures.contents(of: served.store)))
            #expect(try await SeedVerifier.verify(report.output).passed)

            // A build of the same state without changes underway gives the same bytes.
            let still = try await served.builder("still.sqlite", pageSize: 1000).build()
            #expect(still.manifest.sha256 == report.manifest.sha256)
        }
    }

    /// The server keeps the pages it read (30 s by default), as caches in front of it may: a build
    /// soon after another gets pages older than the server's revision and catches up from them.
    @Test func aBuildFromKeptPagesCatchesUpFromTheirRevision() async throws {
        // Pages kept an hour: the second build gets the first one's however loaded the machine.
        try await withServedStore(configure: { $0.snapshotMaxAge = .seconds(3_600) }) { served in
            let first = try await served.builder("first.sqlite").build()
            try await ChangeGenerator.mutate(served.store, changes: 40, seed: 8)
            let second = try await served.builder("second.sqlite").build()
            #expect(second.changeSets == 40)
            #expect(second.manifest.revision == first.manifest.revision + 40)
            #expect(try contents(ofSeed: second.output) == (try await Fixtures.contents(of: served.store)))
            #expect(try await SeedVerifier.verify(second.output).passed)
            // After a compaction the kept pages are older than the history: the build asks for
            // pages read since (notBefore), not for a catch-up the server can no longer give.
            try await ChangeGenerator.mutate(served.store, changes: 5, seed: 9)
            _ = try await served.store.compact(keepingRevisions: 0)
            let third = try await served.builder("third.sqlite").build()
            #expect(third.changeSets == 0)
            #expect(try contents(ofSeed: third.output) == (try await Fixtures.contents(of: served.store)))
        }
    }

    @Test func pageSizesAndResumptionGiveTheSameBytes() async throws {
        try await withServedStore { served in
            let reference = try await served.builder("a.sqlite", pageSize: 1000).build()
            let small = try await served.builder("b.sqlite", pageSize: 7).build()
            #expect(small.manifest.sha256 == reference.manifest.sha256)

            let pages = NIOLockedValueBox<Int>(0)
            await #expect(throws: Interruption.self) {
                try await served.builder("c.sqlite", pageSize: 13).build { event in
                    if case .page = event,
                        pages.withLockedValue({
                            $0 += 1
                            return $0
                        }) == 5
                    {
                        throw Interruption()
                    }
                }
            }
            #expect(!FileManager.default.fileExists(atPath: served.path("c.sqlite")))
            #expect(FileManager.default.fileExists(atPath: served.path("c.sqlite.partial")))
            #expect(!FileManager.default.fileExists(atPath: served.path("c.sqlite.manifest.json")))

            let resumed = try await served.builder("c.sqlite", pageSize: 29, resume: true).build()
            #expect(resumed.resumed)
            #expect(resumed.manifest.sha256 == reference.manifest.sha256)
            #expect(!FileManager.default.fileExists(atPath: served.path("c.sqlite.partial")))
        }
    }

    @Test func aBuildWithoutResumeStartsOver() async throws {
        try await withServedStore { served in
            await #expect(throws: Interruption.self) {
                try await served.builder("d.sqlite").build { if case .page = $0 { throw Interruption() } }
            }
            let fresh = try await served.builder("d.sqlite").build()
            #expect(!fresh.resumed)
            #expect(try await SeedVerifier.verify(fresh.output).passed)
        }
    }

    /// A build killed while it made its work file leaves one without tables (found by
    /// scripts/suites/crash-test.sh): `--resume` starts over instead of calling it foreign.
    @Test(arguments: [false, true]) func resumingAWorkFileWithoutTablesStartsOver(emptySQLite: Bool) async throws {
        try await withServedStore { served in
            let partial = served.path("e.sqlite.partial")
            if emptySQLite {
                let queue = try DatabaseQueue(path: partial)
                _ = try await queue.writeWithoutTransaction {
                    try String.fetchOne($0, sql: "PRAGMA journal_mode = WAL")
                }
                try queue.close()
            } else {
                _ = FileManager.default.createFile(atPath: partial, contents: Data())
            }
            let fresh = try await served.builder("e.sqlite", resume: true).build()
            #expect(!fresh.resumed)
            #expect(try await SeedVerifier.verify(fresh.output).passed)
        }
    }

    /// A build killed in its finish, after the cursors were dropped (found by scripts/suites/crash-test.sh):
    /// every type was complete, so `--resume` catches up and finishes.
    @Test func resumingAWorkFileKilledInItsFinishCompletesIt() async throws {
        try await withServedStore { served in
            let reference = try await served.builder("f.sqlite").build()
            try FileManager.default.copyItem(atPath: reference.output, toPath: served.path("g.sqlite.partial"))
            try await ChangeGenerator.mutate(served.store, changes: 3, seed: 12)
            let resumed = try await served.builder("g.sqlite", resume: true).build()
            #expect(resumed.resumed)
            #expect(try await SeedVerifier.verify(resumed.output).passed)
            #expect(resumed.manifest.revision == (try await served.store.revisions().revision))
            // The copied seed held indexes, as the work file of an older version's finish did.
            let fresh = try await served.builder("h.sqlite").build()
            #expect(resumed.manifest.sha256 == fresh.manifest.sha256)
        }
    }

    /// A finish that finds a dangling reference leaves nothing at its destination and the work
    /// file resumable, cursors included: after the catch-up that repairs it, the same file finishes.
    @Test func aFinishThatFindsADanglingReferenceKeepsTheWorkFile() async throws {
        try await withTemporaryDirectory { directory in
            let destination = directory.appendingPathComponent("seed.new").path
            let event: [JSONValue] = [1, "Gig", "2026-01-01T10:00:00Z", .null, 7, 10, false, .null, 1]
            let writer = try await Self.downloadedWriter(in: directory, events: [event])
            await #expect { try await writer.finish(to: destination) } throws: {
                ($0 as? SeedError)?.code == .invalidData && "\($0)".contains("missing row of locations")
            }
            #expect(!FileManager.default.fileExists(atPath: destination))
            #expect(try await writer.cursors().values.map(\.isComplete) == [true, true])
            let location: [String: JSONValue] = ["name": "Hall", "city": "Graz", "latitude": 47.07, "longitude": 15.44]
            let repair = TypeChanges(type: "locations", create: [7], attributes: ["7": location])
            #expect(try await writer.apply([ChangeSet(revision: 2, changes: [repair])]) == 2)
            try await writer.finish(to: destination)
            #expect(try await SeedVerifier.verify(destination).passed)
        }
    }

    /// A copy that cannot be written (its folder is gone) fails naming it, and the work file stays
    /// resumable: the same file then finishes elsewhere.
    @Test func aCopyThatCannotBeWrittenKeepsTheWorkFile() async throws {
        try await withTemporaryDirectory { directory in
            let writer = try await Self.downloadedWriter(in: directory, events: [])
            let unwritable = directory.appendingPathComponent("gone/seed.new").path
            await #expect { try await writer.finish(to: unwritable) } throws: { "\($0)".contains(unwritable) }
            #expect(try await writer.cursors().values.map(\.isComplete) == [true, true])
            let destination = directory.appendingPathComponent("seed.new").path
            try await writer.finish(to: destination)
            #expect(try await SeedVerifier.verify(destination).passed)
        }
    }

    /// A copy that fills its volume fails naming it and leaves nothing there; the work file stays
    /// resumable and then finishes elsewhere.
    @Test(.enabled(if: SmallVolume.isAvailable, "mounting a tmpfs needs root"))
    func aCopyThatFillsItsVolumeKeepsTheWorkFile() async throws {
        try await withServedStore(events: 4000) { served in
            let writer = try await SeedWriter.create(
                at: served.path("seed.partial"), schema: DemoDataset.schema,
                revision: try await served.store.revisions().revision)
            for type in DemoDataset.schema.types {
                _ = try await writer.insert(
                    FlatSnapshotPage(try await served.store.snapshotPage(of: type.name, after: nil, limit: 100_000)))
            }
            try await SmallVolume.with(kilobytes: 64) { volume in
                let destination = volume.path("seed.new")
                await #expect { try await writer.finish(to: destination) } throws: {
                    ($0 as? SeedError)?.code == .diskFull && "\($0)".contains("cannot write \(destination)")
                }
                let leftovers = try FileManager.default.contentsOfDirectory(atPath: volume.path)
                #expect(leftovers.isEmpty, "\(leftovers)")
            }
            #expect(try await writer.cursors().values.map(\.isComplete) == [true, true])
            try await writer.finish(to: served.path("seed.new"))
            #expect(try await SeedVerifier.verify(served.path("seed.new")).passed)
        }
    }

    /// A work file of the demo schema at revision 1 whose download is complete: no location,
    /// `events` as the rows of its one page.
    static func downloadedWriter(in directory: URL, events: [[JSONValue]]) async throws -> SeedWriter {
        let writer = try await SeedWriter.create(
            at: directory.appendingPathComponent("seed.partial").path, schema: DemoDataset.schema, revision: 1)
        let columns = DemoDataset.schema.types.map { [$0.primaryKey.name] + $0.fields.map(\.name) + ["revision"] }
        _ = try await writer.insert(
            FlatSnapshotPage(SnapshotPage(type: "locations", revision: 1, columns: columns[0], rows: [], next: .null)))
        _ = try await writer.insert(
            FlatSnapshotPage(SnapshotPage(type: "events", revision: 1, columns: columns[1], rows: events, next: .null)))
        return writer
    }

    @Test func resumingRefusesWorkItCannotFinish() async throws {
        try await withServedStore { served in
            await #expect(throws: Interruption.self) {
                try await served.builder("r.sqlite", pageSize: 20).build { if case .page = $0 { throw Interruption() } }
            }
            await #expect { try await served.builder("r.sqlite", resume: true, types: ["locations"]).build() } throws: {
                ($0 as? SeedError)?.code == .notResumable && "\($0)".contains("another schema or type selection")
            }
            try await ChangeGenerator.mutate(served.store, changes: 3, seed: 11)
            _ = try await served.store.compact(keepingRevisions: 0)
            await #expect { try await served.builder("r.sqlite", resume: true).build() } throws: {
                ($0 as? SeedError)?.code == .notResumable && "\($0)".contains("no longer reaches its revision")
            }
            #expect(
                FileManager.default.fileExists(atPath: served.path("r.sqlite.partial")),
                "a refused resume leaves the work file")
            let fresh = try await served.builder("r.sqlite").build()
            #expect(!fresh.resumed)
        }
    }

    @Test func aWorkFileInUseIsLeftAlone() async throws {
        try await withServedStore { served in
            let other = try await SeedWriter.create(
                at: served.path("busy.sqlite.partial"), schema: DemoDataset.schema, revision: 1)
            defer { try? other.close() }
            await #expect { try await served.builder("busy.sqlite").build() } throws: {
                "\($0)".contains("in use by another process")
            }
            #expect(
                FileManager.default.fileExists(atPath: served.path("busy.sqlite.partial")),
                "the other build's file is not deleted")
            #expect(try await other.cursors().count == 2)
        }
    }

    @Test func typesCanBeChosen() async throws {
        try await withServedStore { served in
            let report = try await served.builder("places.sqlite", types: ["locations"]).build()
            #expect(report.manifest.rowCounts.keys.sorted() == ["locations"])
            #expect(try await SeedVerifier.verify(report.output).passed)
            await #expect { try await served.builder("events.sqlite", types: ["events"]).build() } throws: {
                "\($0)".contains("add locations to the selected types")
            }
            await #expect { try await served.builder("none.sqlite", types: ["nope"]).build() } throws: {
                "\($0)".contains("no type 'nope'")
            }
        }
    }

    @Test func failuresLeaveNothingAtTheOutput() async throws {
        try await withServedStore { served in
            await #expect { try await served.builder("denied.sqlite", token: "wrong").build() } throws: {
                ($0 as? SyncClientError)?.code == .unauthorized
            }
            #expect(!FileManager.default.fileExists(atPath: served.path("denied.sqlite")))

            // The server compacts its history while the download runs: catch-up gets 410.
            await #expect {
                try await served.builder("expired.sqlite", pageSize: 100).build { event in
                    guard case .page = event else { return }
                    try await ChangeGenerator.mutate(served.store, changes: 2, seed: 9)
                    _ = try await served.store.compact(keepingRevisions: 0)
                }
            } throws: { ($0 as? SyncClientError)?.code == .historyExpired }
            let files = try FileManager.default.contentsOfDirectory(atPath: served.directory.path)
            #expect(!files.contains { $0.hasPrefix("expired") }, "\(files)")
        }
    }

    @Test func unreachableServersFailClearly() async throws {
        try await withTemporaryDirectory { directory in
            let client = SyncClient(
                configuration: .init(
                    serverURL: URL(string: "http://127.0.0.1:1")!, token: nil, requestTimeout: 2, retry: .none))
            let output = directory.appendingPathComponent("x.sqlite").path
            await #expect { try await SeedBuilder(client: client, options: .init(output: output)).build() } throws: {
                ($0 as? SyncClientError)?.code == .unreachable
            }
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            #expect(leftovers.isEmpty)
        }
    }

    /// Which failures keep the work file for `--resume`: those that may pass (the network, an I/O
    /// error, another process), not those that would fail the same way (a full volume, the
    /// file-size limit, data that does not fit).
    @Test func onlyFailuresThatMayPassKeepTheWorkFile() {
        let kept: [any Error] = [SeedError(.fileSystem, ""), SeedError(.busy, ""), CancellationError()]
        let removed: [any Error] = [
            SeedError(.diskFull, ""), SeedError(.fileSizeLimit, ""), SeedError(.invalidData, ""),
            SeedError(.damaged, ""),
        ]
        #expect(kept.allSatisfy(SeedBuilder.isResumable))
        #expect(!removed.contains(where: SeedBuilder.isResumable))
    }

    /// The applier's own rule, which the client's gap check would otherwise hide: a change set must
    /// carry exactly the stored revision + 1. A later one, the same one again or an earlier one is
    /// refused and nothing is written.
    @Test func aChangeSetMustCarryExactlyTheNextRevision() async throws {
        try await withTemporaryDirectory { directory in
            let writer = try await SeedWriter.create(
                at: directory.appendingPathComponent("seed.partial").path, schema: DemoDataset.schema, revision: 5)
            defer { try? writer.close() }
            for wrong: Int64 in [7, 5, 4] {
                await #expect { try await writer.apply([ChangeSet(revision: wrong, changes: [])]) } throws: {
                    ($0 as? SeedError)?.code == .invalidData
                }
                #expect(try await writer.revision() == 5)
            }
            #expect(
                try await writer.apply([ChangeSet(revision: 6, changes: []), ChangeSet(revision: 7, changes: [])]) == 7)
            await #expect {
                try await writer.apply([ChangeSet(revision: 8, changes: []), ChangeSet(revision: 10, changes: [])])
            } throws: { _ in true }
            #expect(try await writer.revision() == 7, "a gap inside a batch rolls the whole batch back")
        }
    }

    /// Change sets applied in one call write each row once, the last version of it, in key order:
    /// the rows must be those of applying them one at a time, whatever the history of each key
    /// (created, updated, deleted and created again, several times in one call).
    @Test(arguments: 0..<3)
    func changeSetsAppliedTogetherEqualThemAppliedOneByOne(round: Int) async throws {
        var random = SplitMix64(seed: UInt64(round) &+ 40)
        var exists = Set<Int64>()
        var changeSets: [ChangeSet] = []
        for revision in Int64(2)...61 {
            var changes = TypeChanges(type: "locations")
            for key in Set((0..<3).map { _ in Int64(random.next() % 6) + 1 }) {
                if exists.contains(key), random.next() % 3 == 0 {
                    changes.delete.append(.int(key))
                    exists.remove(key)
                    continue
                }
                if exists.insert(key).inserted {
                    changes.create.append(.int(key))
                } else {
                    changes.update.append(.int(key))
                }
                changes.attributes[String(key)] = [
                    "name": .string("r\(revision)"), "city": "Graz", "latitude": .double(Double(revision)),
                    "longitude": 0,
                ]
            }
            changeSets.append(ChangeSet(revision: revision, changes: [changes]))
        }
        try await withTemporaryDirectory { directory in
            func rows(_ name: String, callsOf size: Int) async throws -> [Row] {
                let path = directory.appendingPathComponent(name).path
                let writer = try await SeedWriter.create(at: path, schema: DemoDataset.schema, revision: 1)
                for start in stride(from: 0, to: changeSets.count, by: size) {
                    try await writer.apply(Array(changeSets[start..<min(start + size, changeSets.count)]))
                }
                #expect(try await writer.revision() == 61)
                try writer.close()
                return try DatabaseQueue(path: path).read {
                    try Row.fetchAll($0, sql: "SELECT * FROM locations ORDER BY id")
                }
            }
            let together = try await rows("together.partial", callsOf: changeSets.count)
            #expect(together == (try await rows("apart.partial", callsOf: 1)))
            #expect(together.count == exists.count)
        }
    }
}
