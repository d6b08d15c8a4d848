import Foundation
import SeedSyncDemo
import SeedSyncModel
import SeedSyncSeed

/// Seed inputs for each target, made by SeedSync's own writers from the workspace's data: real change
/// sets, pushes, snapshot pages, a seed, its manifest and gzip streams, so that the fuzzer's mutations
/// start from what the code reads in use and reach past its first checks.
enum FuzzCorpus {
    /// Writes the inputs for `target` into `directory`, one file each.
    static func write(for target: FuzzTarget, to directory: String, from workspace: FuzzWorkspace) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        for (index, input) in try inputs(for: target, from: workspace).enumerated() {
            let path = URL(fileURLWithPath: directory).appendingPathComponent("\(target.rawValue)-\(index)").path
            guard FileManager.default.createFile(atPath: path, contents: Data(input)) else {
                throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path])
            }
        }
    }

    static func inputs(for target: FuzzTarget, from workspace: FuzzWorkspace) throws -> [[UInt8]] {
        let store = workspace.store
        let (changeSets, pages, revision) = try Blocking.run {
            var keys: [String: [JSONValue]] = [:]
            var pages: [[UInt8]] = []
            for type in DemoDataset.schema.types {
                keys[type.name] = try await store.keys(of: type.name)
                pages.append(try await store.snapshotPageJSON(of: type.name, after: nil, limit: 4))
            }
            var generator = ChangeGenerator(schema: DemoDataset.schema, existingKeys: keys, seed: 1)
            return ((0..<8).map { _ in generator.next() }, pages, try await store.revisions().revision)
        }
        let pushes = pushRequests(changeSets, revision: revision)
        switch target {
        case .json, .wire:
            return changeSets.map { $0.jsonBytes() } + pages + pushes + [
                Array(
                    try JSONEncoder().encode(
                        SyncResponse(maxRevision: revision, hasMore: false, changeSets: changeSets))),
                Array(try JSONEncoder().encode(DemoDataset.schema)),
            ]
        case .commit: return changeSets.map { $0.jsonBytes() }
        case .apply: return changeSets.map { $0.jsonBytes() } + pages
        case .push: return pushes
        case .seed: return [Array(try Data(contentsOf: URL(fileURLWithPath: workspace.seedPath)))]
        case .manifest: return [Array(try SeedManifest(describing: workspace.seedPath).jsonData())]
        case .gzip: return try [workspace.seedPath, workspace.store.path].map { try gzip($0, in: workspace) }
        }
    }

    /// Sync requests that push: a new location and an event at it (temporary keys), and the
    /// generated change sets with the revision each updated or deleted row was read at.
    private static func pushRequests(_ changeSets: [ChangeSet], revision: Int64) -> [[UInt8]] {
        let creation = ChangeSet(changes: [
            TypeChanges(
                type: "locations", create: [.int(-1)],
                attributes: [
                    "-1": ["name": "Hall", "city": "Oslo", "latitude": .double(59.9), "longitude": .double(10.7)]
                ]),
            TypeChanges(
                type: "events", create: [.int(-2)],
                attributes: [
                    "-2": [
                        "title": "Opening", "starts_at": "2026-01-01T10:00:00Z", "ends_at": .null,
                        "location_id": .int(-1), "capacity": .int(40), "cancelled": .bool(false),
                        "description": .null,
                    ]
                ]),
        ])
        let based = changeSets.map { changeSet in
            var based = changeSet
            for index in based.changes.indices {
                var changes = based.changes[index]
                for key in changes.update.compactMap(\.keyString) {
                    changes.attributes[key]?["revision"] = .int(revision)
                }
                for key in changes.delete.compactMap(\.keyString) {
                    changes.attributes[key] = ["revision": .int(revision)]
                }
                based.changes[index] = changes
            }
            return based
        }
        return ([creation] + based).enumerated().map { index, changeSet in
            SyncRequest(maxRevision: revision, changeSets: [PushedChangeSet(id: "fuzz-\(index)", changeSet: changeSet)])
                .jsonBytes()
        }
    }

    private static func gzip(_ path: String, in workspace: FuzzWorkspace) throws -> [UInt8] {
        let compressed = workspace.directory.appendingPathComponent("corpus.gz").path
        defer { unlink(compressed) }
        try Gzip.compress(path, to: compressed)
        return Array(try Data(contentsOf: URL(fileURLWithPath: compressed)))
    }
}
