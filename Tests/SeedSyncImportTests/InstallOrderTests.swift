import Foundation
import GRDB
import SeedSyncImport
import SeedSyncModel
import SeedSyncSeed
import SeedSyncTesting
import Testing

/// The order of the file operations that make an install (and a published seed) survive a power
/// loss, which no crash test can see: each file is synced before it is renamed into place, and
/// the folder is synced after the last rename.
@Suite struct InstallOrderTests {
    @Test func anInstallWritesSyncsRenamesThenSyncsTheFolder() async throws {
        try await withImportFixture { fixture in
            let journal = FileSystem.Journal()
            try await FileSystem.$journal.withValue(journal) { try await fixture.importer().run() }
            let installing = fixture.database + ".installing"
            let folder = URL(fileURLWithPath: fixture.database).deletingLastPathComponent().path
            let operations = journal.operations
            #expect(
                operations.filter { $0.path == installing || $0.path == folder } == [
                    .create(installing), .sync(installing), .rename(installing, to: fixture.database),
                    .syncDirectory(folder),
                ])
            expectSyncedBeforeRenamed(operations)
        }
    }

    @Test(arguments: [false, true])
    func aPublishedSeedIsSyncedBeforeItIsRenamedAndTheManifestComesLast(gzip: Bool) async throws {
        try await withServedStore(events: 100) { served in
            let journal = FileSystem.Journal()
            let report = try await FileSystem.$journal.withValue(journal) {
                try await served.builder("seed/demo.sqlite", gzip: gzip).build()
            }
            let operations = journal.operations
            expectSyncedBeforeRenamed(operations)
            let renamed = operations.compactMap { if case .rename(_, let to) = $0 { to } else { nil } }
            #expect(renamed == [report.output] + (gzip ? [report.output + ".gz"] : []) + [report.manifestPath])
            let folder = URL(fileURLWithPath: report.output).deletingLastPathComponent().path
            #expect(operations.last == .syncDirectory(folder))
        }
    }

    /// Every file renamed into place was synced first, and the folder is synced after the last rename.
    func expectSyncedBeforeRenamed(
        _ operations: [FileSystem.Operation], sourceLocation: SourceLocation = #_sourceLocation
    ) {
        for (index, operation) in operations.enumerated() {
            guard case .rename(let source, _) = operation else { continue }
            #expect(
                operations[..<index].contains(.sync(source)), "\(source) renamed before it was synced",
                sourceLocation: sourceLocation)
            let folder = URL(fileURLWithPath: source).deletingLastPathComponent().path
            #expect(
                operations[index...].contains(.syncDirectory(folder)), "no folder sync after renaming \(source)",
                sourceLocation: sourceLocation)
        }
        #expect(operations.contains { if case .rename = $0 { true } else { false } }, sourceLocation: sourceLocation)
    }

    /// A `-wal` left at the database path by a database that is gone must not be replayed onto
    /// the installed seed.
    @Test func aStaleWALBesideTheDatabasePathIsRemovedBeforeTheInstall() async throws {
        try await withImportFixture { fixture in
            try FileManager.default.createDirectory(
                atPath: URL(fileURLWithPath: fixture.database).deletingLastPathComponent().path,
                withIntermediateDirectories: true)
            try Self.leaveStaleWAL(at: fixture.database)
            #expect(FileManager.default.fileExists(atPath: fixture.database + "-wal"))
            let report = try await fixture.importer().run()
            #expect(report.installed)
            #expect(try contents(ofSeed: fixture.database) == (try await fixture.serverContents()))
        }
    }

    /// Writes another database at `path` in WAL mode, keeps a copy of its `-wal` (whose frames
    /// would replace the first pages of any file at `path`), removes the database and puts the
    /// copy back: what a database deleted without its journal leaves.
    static func leaveStaleWAL(at path: String) throws {
        let queue = try DatabaseQueue(path: path)
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0")
            try db.execute(sql: "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
            for id in 0..<200 {
                try db.execute(
                    sql: "INSERT INTO notes VALUES (?, ?)", arguments: [id, String(repeating: "n", count: 100)])
            }
            try FileManager.default.copyItem(atPath: path + "-wal", toPath: path + ".stale-wal")
        }
        try queue.close()
        for leftover in [path, path + "-wal", path + "-shm"] where FileManager.default.fileExists(atPath: leftover) {
            try FileManager.default.removeItem(atPath: leftover)
        }
        try FileManager.default.moveItem(atPath: path + ".stale-wal", toPath: path + "-wal")
    }

    /// A seed at exactly the database's revision is not newer: a second run must not copy it over
    /// the database (which would then happen on every run).
    @Test func aSeedAtTheDatabasesRevisionIsNotNewer() async throws {
        try await withImportFixture(changesAfter: 0) { fixture in
            let first = try await fixture.importer().run()
            #expect(first.installed && first.toRevision == fixture.seedRevision)
            let second = try await fixture.importer().run()
            #expect(second.replacements.isEmpty)
            #expect(second.seedProblem == nil)
        }
    }
}

extension FileSystem.Operation {
    /// The file the operation is about (the source of a rename).
    var path: String {
        switch self {
        case .create(let path), .sync(let path), .syncDirectory(let path): path
        case .rename(let source, _): source
        }
    }
}
