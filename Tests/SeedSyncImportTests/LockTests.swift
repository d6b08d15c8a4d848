import Foundation
import SeedSyncImport
import Testing

/// One importer at a time per database.
@Suite struct LockTests {
    @Test func aSecondImporterWaitsForTheLockThenGivesUp() async throws {
        try await withImportFixture { fixture in
            try FileManager.default.createDirectory(
                at: URL(fileURLWithPath: fixture.database).deletingLastPathComponent(),
                withIntermediateDirectories: true
            )
            let held = try await ImportLock.acquire(for: fixture.database, timeout: 0)
            let start = ContinuousClock.now
            await #expect { try await fixture.importer(lockTimeout: 0.5).run() } throws: { error in
                (error as? ImportError)?.code == .locked && "\(error)".contains("another importer")
            }
            #expect(ContinuousClock.now - start >= .milliseconds(500))
            #expect(!FileManager.default.fileExists(atPath: fixture.database))

            // Released within the wait: the second importer goes on.
            Task {
                try await Task.sleep(for: .milliseconds(300))
                held.release()
            }
            let report = try await fixture.importer(lockTimeout: 10).run()
            #expect(report.installed)
        }
    }
}
