import Foundation
import SeedSyncImport
import SeedSyncModel
import SeedSyncSeed
import SeedSyncTesting
import Testing

/// The importer on a volume that is full for real (a small tmpfs) or under a file-size limit:
/// the error is `.storage` and names the file, nothing is left half-written, a good database is
/// never called foreign, and a database that can still sync does.
@Suite(.enabled(if: SmallVolume.isAvailable, "mounting a tmpfs needs root"))
struct StorageFailureTests {
    /// With about 20 KiB free, the installed database cannot even be opened (SQLite needs room for
    /// its `-shm`): an I/O problem, never "not a SeedSync database, move it away".
    @Test func aDatabaseThatCannotBeReadOnAFullVolumeIsNotCalledForeign() async throws {
        try await withImportFixture { fixture in
            try await SmallVolume.with(kilobytes: 2048) { volume in
                let database = volume.path("events.sqlite")
                try await fixture.importer(database: database).run()
                try await fixture.mutate(5, seed: 51)
                let before = try Data(contentsOf: URL(fileURLWithPath: database))
                try volume.fill(leaving: 20 << 10)
                await #expect { try await fixture.importer(database: database).run() } throws: { error in
                    let error = error as? ImportError
                    return error?.code == .storage && error!.description.contains(database)
                        && !error!.description.contains("not a SeedSync")
                        && !error!.description.contains("move it away")
                }
                #expect(try Data(contentsOf: URL(fileURLWithPath: database)) == before)
            }
        }
    }

    @Test func aSeedThatDoesNotFitIsNotInstalledAndLeavesNothing() async throws {
        try await withImportFixture(events: 2000) { fixture in
            try await SmallVolume.with(kilobytes: 128) { volume in
                let database = volume.path("events.sqlite")
                await #expect { try await fixture.importer(database: database).run() } throws: { error in
                    let error = error as? ImportError
                    return error?.code == .storage && error!.description.contains(database + ".installing")
                        && error!.description.contains("no space left")
                }
                #expect(files(in: volume.path) == ["events.sqlite.lock"])
            }
        }
    }

    /// No room to copy a newer seed: reported, and the database it would have replaced syncs on.
    @Test func aNewerSeedWithoutRoomToCopyItIsReportedAndTheDatabaseSyncs() async throws {
        try await withImportFixture(events: 2000) { fixture in
            try await SmallVolume.with(kilobytes: 4096) { volume in
                let database = volume.path("events.sqlite")
                try await fixture.importer(database: database).run()
                try await fixture.mutate(10, seed: 52)
                let newer = try await fixture.buildSeed("newer.sqlite")
                try await fixture.mutate(5, seed: 53)
                try volume.fill(leaving: 160 << 10)
                let report = try await fixture.importer(seed: newer, database: database).run()
                #expect(report.replacements.isEmpty)
                #expect(report.seedProblem?.contains("no space left") == true, "\(report.seedProblem ?? "")")
                #expect(try contents(ofSeed: database) == (try await fixture.serverContents()))
                #expect(!files(in: volume.path).contains("events.sqlite.installing"))
            }
        }
    }

    /// After a 410 the snapshot download fills the volume: the error says so, and no
    /// `.snapshot.partial` (or its `-wal`) is left to keep the volume full.
    @Test func aSnapshotThatDoesNotFitLeavesNoPartialFile() async throws {
        try await withImportFixture(events: 2000) { fixture in
            try await SmallVolume.with(kilobytes: 4096) { volume in
                let database = volume.path("events.sqlite")
                try await fixture.importer(database: database).run()
                try await fixture.mutate(20, seed: 54)
                _ = try await fixture.served.store.compact(keepingRevisions: 5)
                try volume.fill(leaving: 200 << 10)
                let before = try revision(of: database)
                await #expect { try await fixture.importer(database: database).run() } throws: { error in
                    (error as? ImportError)?.code == .storage && "\(error)".contains("snapshot")
                }
                #expect(files(in: volume.path) == [".filler", "events.sqlite", "events.sqlite.lock"])
                #expect(try revision(of: database) == before)
            }
        }
    }

    /// The catch-up fills the volume: `.storage` naming the database; what was committed stays,
    /// sound; once there is room the next run ends equal to the server.
    @Test func aCatchUpThatFillsTheVolumeStopsSoundAndResumes() async throws {
        try await withImportFixture(events: 2000) { fixture in
            try await SmallVolume.with(kilobytes: 4096) { volume in
                let database = volume.path("events.sqlite")
                try await fixture.importer(database: database).run()
                let before = try revision(of: database)
                try await fixture.mutate(400, seed: 55)
                try volume.fill(leaving: 48 << 10)
                await #expect { try await fixture.importer(database: database).run() } throws: { error in
                    (error as? ImportError)?.code == .storage && "\(error)".contains(database)
                }
                #expect(try quickCheck(database) == "ok")
                #expect(try revision(of: database) >= before)
                try FileManager.default.removeItem(atPath: volume.path(".filler"))
                try await fixture.importer(database: database).run()
                #expect(try contents(ofSeed: database) == (try await fixture.serverContents()))
            }
        }
    }

    /// A local edit on a full volume: `.storage`, and neither the row nor an outbox entry is
    /// written; once there is room the same edit is written and queued.
    @Test func aLocalEditOnAFullVolumeWritesNothing() async throws {
        try await withImportFixture(events: 2000) { fixture in
            try await SmallVolume.with(kilobytes: 4096) { volume in
                let database = volume.path("events.sqlite")
                let importer = fixture.importer(database: database)
                try await importer.run()
                let before = try contents(ofSeed: database)
                try volume.fill(leaving: 0)
                let hall: [String: JSONValue] = [
                    "name": .string(String(repeating: "Hall ", count: 2000)), "city": "Oslo", "latitude": 1.5,
                    "longitude": 2.5,
                ]
                await #expect { try await importer.write { try $0.create("locations", hall) } } throws: { error in
                    (error as? ImportError)?.code == .storage && "\(error)".contains(database)
                }
                #expect(try contents(ofSeed: database) == before)
                try FileManager.default.removeItem(atPath: volume.path(".filler"))
                #expect(try outboxCount(database) == 0)
                _ = try await importer.write { try $0.create("locations", hall) }
                #expect(try outboxCount(database) == 1)
            }
        }
    }
}
