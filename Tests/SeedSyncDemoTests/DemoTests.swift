import Foundation
import SeedSyncDemo
import SeedSyncModel
import SeedSyncTesting
import Testing

@Suite struct DemoTests {
    @Test func demoDataIsDeterministicAndValid() throws {
        let dataset = DemoDataset(events: 500, locations: 30, seed: 42)
        let events = Array(dataset.rows(of: "events"))
        #expect(events == Array(DemoDataset(events: 500, locations: 30, seed: 42).rows(of: "events")))
        #expect(events != Array(DemoDataset(events: 500, locations: 30, seed: 43).rows(of: "events")))
        let type = try #require(DemoDataset.schema.type(named: "events"))
        for row in events {
            var object = Dictionary(uniqueKeysWithValues: zip(type.fields.map(\.name), row.values))
            object["id"] = row.key
            #expect(try type.validateRow(object) == row)
        }
    }

    @Test func mutationsAreValidRealisticAndReproducible() async throws {
        try await withTemporaryDirectory { directory in
            let first = try await Fixtures.emptyStore(DemoDataset.schema, in: directory, name: "a.sqlite")
            let second = try await Fixtures.emptyStore(DemoDataset.schema, in: directory, name: "b.sqlite")
            #expect(try await ChangeGenerator.mutate(first, changes: 400, seed: 5) == 1...400)
            try await ChangeGenerator.mutate(second, changes: 400, seed: 5)
            #expect(try await Fixtures.contents(of: first) == Fixtures.contents(of: second))
            let feed = try await first.changeFeed(after: 0, limit: 400, byteBudget: .max)
            let changeSets = try feed.changeSets.map { try JSONDecoder().decode(ChangeSet.self, from: Data($0.json)) }
            let kinds = changeSets.flatMap(\.changes).reduce(into: [0, 0, 0]) { counts, change in
                counts[0] += change.create.count
                counts[1] += change.update.count
                counts[2] += change.delete.count
            }
            #expect(kinds.allSatisfy { $0 > 20 }, "creates, updates and deletes: \(kinds)")
            #expect(Set(changeSets.flatMap(\.types)) == ["locations", "events"])
        }
    }
}
