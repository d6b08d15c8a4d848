import Foundation
import GRDB
import SeedSyncClient
import SeedSyncImport
import SeedSyncModel
import SeedSyncTesting
import Testing

/// Readers of the database during a sync.
@Suite struct ReaderTests {
    /// Every read transaction sees whole change sets: the rows at the stored revision R are exactly
    /// the ones change set R wrote, and no row is newer than R. With a transaction per batch of 5
    /// rows, the reader sees the revisions in between; with one held across the answers
    /// (``SeedImporter/Configuration/catchUpCacheMiB``, no commit on the way however slow the
    /// machine), the seed's and the last, and the ones in
    /// between again when it commits every 40 rows (``SeedImporter/Configuration/maxRowsPerCommit``)
    /// or every 2 ms (``SeedImporter/Configuration/maxSecondsPerCommit``).
    @Test(arguments: [(0, 1_000_000, 600), (128, 1_000_000, 600), (128, 40, 600), (128, 1_000_000, 0.002)])
    func aReaderAlwaysSeesWholeChangeSets(catchUpCacheMiB: Int, maxRowsPerCommit: Int, maxSecondsPerCommit: Double)
        async throws
    {
        try await withImportFixture(events: 400, changesAfter: 300) { fixture in
            let written = try await Self.rowsWritten(by: fixture)
            // Install only: the first run has no server to sync from.
            let offline = SeedImporter(
                configuration: .init(
                    seed: fixture.seed, database: fixture.database,
                    server: .init(
                        serverURL: URL(string: "http://127.0.0.1:1")!, token: nil, requestTimeout: 2, retry: .none)
                ))
            _ = try? await offline.run()

            let reader = try DatabaseQueue(path: fixture.database)
            let syncing = Locked(true)
            // On a thread of its own: the loop never suspends, and the importer and the server need the pool.
            let observations = Task {
                try await offPool {
                    try Self.readWhile(syncing, reader, written: written, seedRevision: fixture.seedRevision)
                }
            }
            let report = try await fixture.importer(
                maxRowsPerTransaction: 5, catchUpCacheMiB: catchUpCacheMiB, maxRowsPerCommit: maxRowsPerCommit,
                maxSecondsPerCommit: maxSecondsPerCommit, syncLimit: 20
            ).run()
            syncing.update { $0 = false }
            let (seen, stray) = try await observations.value
            try reader.close()
            #expect(stray.isEmpty, "\(stray.prefix(3))")
            if catchUpCacheMiB == 0 || maxRowsPerCommit < 1_000_000 || maxSecondsPerCommit < 1 {
                #expect(seen.count >= 3, "the reader saw revisions \(seen.keys.sorted())")
            } else {
                #expect(
                    Set(seen.keys).isSubset(of: [fixture.seedRevision, report.toRevision]), "\(seen.keys.sorted())")
            }
        }
    }

    /// An app always has readers open. A read transaction held through the whole run, across
    /// the sync (and, with a newer seed, the replacement), must not hold up the end of the run:
    /// closing checkpoints without waiting. A blocking checkpoint would wait out the importer's
    /// 10-second busy timeout once per close, in every run.
    ///
    /// A run takes under a second here, but a loaded machine (the whole suite in parallel) has
    /// stretched one past ten. So the test decides by what only a blocked run does: it is slow
    /// every time. Up to three runs, each in a fresh fixture; one under ten seconds passes.
    @Test(arguments: [false, true])
    func anOpenReadTransactionDoesNotHoldUpTheRun(withNewerSeed: Bool) async throws {
        var times: [Duration] = []
        while times.count < 3 {
            let elapsed = try await Self.runWithAReaderHeld(withNewerSeed: withNewerSeed)
            times.append(elapsed)
            if elapsed < .seconds(10) { return }
        }
        Issue.record("every run took ten seconds or more (\(times)): it waited for the reader")
    }

    /// One run with a read transaction held on a thread of its own until the run is over: how
    /// long the run took. It also checks that the reader's snapshot stayed and that the run ended
    /// equal to the server.
    static func runWithAReaderHeld(withNewerSeed: Bool) async throws -> Duration {
        let elapsed = Locked(Duration.zero)
        try await withImportFixture(changesAfter: 30) { fixture in
            let seed = withNewerSeed ? try await fixture.installThenBuildNewerSeed(after: 10).newer : fixture.seed
            if !withNewerSeed { try await fixture.importer().run() }
            try await fixture.mutate(20, seed: 41)
            let reader = try DatabaseQueue(path: fixture.database)
            let (started, release) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
            let held = Task {
                try await offPool {
                    try reader.read { db in
                        let before = try storedRevision(db)
                        started.signal()
                        release.wait()
                        return (before, try storedRevision(db))
                    }
                }
            }
            try await offPool { started.wait() }
            let start = ContinuousClock.now
            let run: Result<ImportReport, any Error>
            do { run = .success(try await fixture.importer(seed: seed).run()) } catch { run = .failure(error) }
            let took = ContinuousClock.now - start
            release.signal()
            let (before, after) = try await held.value
            let report = try run.get()
            try reader.close()
            #expect(report.replacements.count == (withNewerSeed ? 1 : 0))
            #expect(before == after, "the reader's snapshot stays")
            #expect(try contents(ofSeed: fixture.database) == (try await fixture.serverContents()))
            elapsed.update { $0 = took }
        }
        return elapsed.value
    }

    /// Reads in a loop until `syncing` turns false: the revisions seen, and what broke the rule.
    static func readWhile(_ syncing: Locked<Bool>, _ reader: DatabaseQueue, written: [Int64: Int], seedRevision: Int64)
        throws -> ([Int64: Int], [String])
    {
        var seen: [Int64: Int] = [:]
        var stray: [String] = []
        repeat {
            let (revision, newest, atRevision) = try reader.read { db in try observe(db) }
            seen[revision, default: 0] += 1
            if newest > revision { stray.append("a row at \(newest) with the database at \(revision)") }
            if revision != seedRevision, atRevision != written[revision] {
                stray.append(
                    "\(atRevision) rows at revision \(revision), change set \(revision) wrote \(written[revision] ?? -1)"
                )
            }
        } while syncing.value
        return (seen, stray)
    }

    /// Rows created or updated by each change set after the seed, by revision.
    static func rowsWritten(by fixture: ImportFixture) async throws -> [Int64: Int] {
        var written: [Int64: Int] = [:]
        var revision = fixture.seedRevision
        while true {
            let feed = try await fixture.served.client().sync(from: revision, limit: 1000)
            for changeSet in feed.changeSets {
                written[changeSet.revision!] = changeSet.changes.reduce(0) { $0 + $1.create.count + $1.update.count }
            }
            revision = feed.maxRevision
            if !feed.hasMore { return written }
        }
    }

    /// The stored revision, the newest row revision, and the rows at the stored revision.
    static func observe(_ db: Database) throws -> (Int64, Int64, Int) {
        let revision = try storedRevision(db) ?? -1
        var newest: Int64 = 0
        var atRevision = 0
        for table in ["events", "locations"] {
            newest = max(newest, try Int64.fetchOne(db, sql: "SELECT max(revision) FROM \(table)") ?? 0)
            atRevision +=
                try Int.fetchOne(db, sql: "SELECT count(*) FROM \(table) WHERE revision = ?", arguments: [revision])
                ?? 0
        }
        return (revision, newest, atRevision)
    }
}
