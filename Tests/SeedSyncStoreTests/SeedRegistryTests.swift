import Foundation
import SeedSyncDemo
import SeedSyncModel
import SeedSyncStore
import SeedSyncTesting
import Testing

/// Registered seeds on every store: compaction keeps the history they need until they are retired.
@Suite struct SeedRegistryTests {
    static let sha = String(repeating: "ab", count: 32)
    static let other = String(repeating: "cd", count: 32)

    @Test(arguments: StoreBackend.tested) func aRegisteredSeedPinsCompactionUntilRetired(backend: StoreBackend)
        async throws
    {
        try await backend.withDemoStore(events: 40, locations: 5) { store in
            try await ChangeGenerator.mutate(store, changes: 30, seed: 3)
            let seed = try await store.register(SeedRegistration(sha256: Self.sha, revision: 11, schemaVersion: 1))
            #expect(seed.revision == 11 && seed.retiredAt == nil && seed.registeredAt.hasSuffix("Z"))
            #expect(
                try await store.register(SeedRegistration(sha256: Self.sha, revision: 11, schemaVersion: 1)) == seed)
            _ = try await store.register(SeedRegistration(sha256: Self.other, revision: 20, schemaVersion: 1))
            #expect(try await store.registeredSeeds().map(\.sha256) == [Self.sha, Self.other])
            // Compaction asked to keep 5 revisions keeps everything after the oldest registered seed.
            let compaction = try await store.compact(keepingRevisions: 5)
            #expect(compaction.minRevision == 11 && compaction.pinnedBy == seed)
            #expect(try await store.changeFeed(after: 11, limit: 100, byteBudget: 1 << 24).changeSets.count == 20)
            // Retired, it no longer holds compaction back; the next seed does.
            #expect(try await store.retireSeed(sha256: Self.sha)?.retiredAt != nil)
            #expect(try await store.compact(keepingRevisions: 5).minRevision == 20)
            _ = try await store.retireSeed(sha256: Self.other)
            let free = try await store.compact(keepingRevisions: 5)
            #expect(free.minRevision == 26 && free.pinnedBy == nil)
            #expect(try await store.retireSeed(sha256: String(repeating: "0", count: 64)) == nil)
        }
    }

    /// A seed registered with the address it is published at keeps it; registered again without
    /// one it keeps it too, with another (the seed moved) it takes that one; an address that is
    /// not an http(s) file address is refused.
    @Test(arguments: StoreBackend.tested) func aRegisteredSeedKeepsTheAddressItIsPublishedAt(backend: StoreBackend)
        async throws
    {
        try await backend.withDemoStore(events: 40, locations: 5) { store in
            try await ChangeGenerator.mutate(store, changes: 10, seed: 3)
            let cdn = "https://cdn.example.com/seeds/events.sqlite.gz"
            let first = try await store.register(
                SeedRegistration(sha256: Self.sha, revision: 5, schemaVersion: 1, url: cdn))
            #expect(first.url == cdn)
            #expect(
                try await store.register(SeedRegistration(sha256: Self.sha, revision: 5, schemaVersion: 1)) == first)
            let moved = "https://other.example.com/events.sqlite.gz"
            let second = try await store.register(
                SeedRegistration(sha256: Self.sha, revision: 5, schemaVersion: 1, url: moved))
            #expect(second.url == moved && second.registeredAt == first.registeredAt)
            #expect(try await store.registeredSeeds() == [second])
            _ = try await store.retireSeed(sha256: Self.sha)
            #expect(try await store.registeredSeeds().first?.url == moved)
            for wrong in [
                "ftp://cdn.example.com/seed.sqlite", "seeds/events.sqlite", "https://cdn.example.com/",
                "https://cdn.example.com/seeds/", "https://cdn.example.com/seed.sqlite.gz?sig=abc",
                "https://cdn.example.com/seed.sqlite.gz#top",
                "https://cdn.example.com/" + String(repeating: "a", count: 2048),
            ] {
                await #expect("\(wrong.prefix(40))") {
                    try await store.register(
                        SeedRegistration(sha256: Self.other, revision: 5, schemaVersion: 1, url: wrong))
                } throws: {
                    ($0 as? SyncStoreError)?.code == .invalidRegistration && "\($0)".contains("url must be")
                }
            }
            #expect(try await store.registeredSeeds().count == 1)
        }
    }

    /// A retired seed registered again (`seed-build --register` of the same seed) pins the history
    /// again, as the command promises, while the history still reaches it; once compacted past, it
    /// is refused as expired, never answered as if it pinned anything.
    @Test(arguments: StoreBackend.tested) func aRetiredSeedRegisteredAgainPinsTheHistoryAgain(backend: StoreBackend)
        async throws
    {
        try await backend.withDemoStore(events: 40, locations: 5) { store in
            try await ChangeGenerator.mutate(store, changes: 30, seed: 3)
            let registration = SeedRegistration(sha256: Self.sha, revision: 11, schemaVersion: 1)
            let first = try await store.register(registration)
            _ = try await store.retireSeed(sha256: Self.sha)
            let again = try await store.register(registration)
            #expect(again.retiredAt == nil && again.registeredAt == first.registeredAt)
            #expect(try await store.registeredSeeds() == [again])
            #expect(try await store.compact(keepingRevisions: 5).minRevision == 11)
            _ = try await store.retireSeed(sha256: Self.sha)
            #expect(try await store.compact(keepingRevisions: 5).minRevision == 26)
            await #expect { try await store.register(registration) } throws: {
                ($0 as? SyncStoreError)?.code == .historyExpired
            }
        }
    }

    @Test(arguments: StoreBackend.tested) func registrationsTheHistoryCannotServeAreRefused(backend: StoreBackend)
        async throws
    {
        try await backend.withDemoStore(events: 40, locations: 5) { store in
            try await ChangeGenerator.mutate(store, changes: 10, seed: 3)
            _ = try await store.compact(keepingRevisions: 5)
            let cases: [(SeedRegistration, SyncStoreError.Code)] = [
                (SeedRegistration(sha256: "ABC", revision: 8, schemaVersion: 1), .invalidRegistration),
                (SeedRegistration(sha256: Self.sha, revision: 2, schemaVersion: 1), .historyExpired),
                (SeedRegistration(sha256: Self.sha, revision: 99, schemaVersion: 1), .revisionAhead),
                (SeedRegistration(sha256: Self.sha, revision: 8, schemaVersion: 7), .unknownSchemaVersion),
                // The demo dataset has no scope.
                (SeedRegistration(sha256: Self.sha, revision: 8, schemaVersion: 1, scopes: [1]), .invalidRegistration),
            ]
            for (registration, code) in cases {
                await #expect { try await store.register(registration) } throws: {
                    ($0 as? SyncStoreError)?.code == code
                }
            }
            _ = try await store.register(SeedRegistration(sha256: Self.sha, revision: 8, schemaVersion: 1))
            await #expect {
                try await store.register(SeedRegistration(sha256: Self.sha, revision: 9, schemaVersion: 1))
            } throws: {
                ($0 as? SyncStoreError)?.code == .invalidRegistration && "\($0)".contains("registered already")
            }
        }
    }
}
