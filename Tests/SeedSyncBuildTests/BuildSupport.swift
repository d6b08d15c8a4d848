import Foundation
import SeedSyncBuild
import SeedSyncClient
import SeedSyncDemo
import SeedSyncModel
import SeedSyncSeed
import SeedSyncStore
import SeedSyncTesting

/// A server store with a mutation history, served on loopback, in a temporary directory.
struct ServedStore: Sendable {
    let url: URL
    let store: SQLiteSyncStore
    let directory: URL

    func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    func builder(_ output: String, pageSize: Int = 50, gzip: Bool = false, resume: Bool = false, types: [String]? = nil, token: String = liveServerToken) -> SeedBuilder {
        let client = SyncClient(configuration: .init(serverURL: url, token: token, requestTimeout: 10, retry: .none))
        return SeedBuilder(client: client, options: .init(output: path(output), types: types, pageSize: pageSize, syncLimit: 7, gzip: gzip, resume: resume))
    }
}

/// Runs `body` against a demo store (or `schema` filled by the change generator) served live.
func withServedStore(
    schema: DatasetSchema? = nil,
    events: Int = 300,
    locations: Int = 20,
    changes: Int = 40,
    _ body: @escaping @Sendable (ServedStore) async throws -> Void
) async throws {
    try await withTemporaryDirectory { directory in
        let store = if let schema {
            try await Fixtures.emptyStore(schema, in: directory)
        } else {
            try await Fixtures.demoStore(events: events, locations: locations, seed: 3, in: directory)
        }
        try await ChangeGenerator.mutate(store, changes: changes, seed: 5)
        try await withLiveServer(store) { url in
            try await body(ServedStore(url: url, store: store, directory: directory))
        }
    }
}

/// Every row of every type of the seed at `path`, as the server's snapshot pages give them.
func contents(ofSeed path: String) throws -> [String: [[JSONValue]]] {
    let seed = try SeedFile(path: path)
    defer { try? seed.close() }
    var contents: [String: [[JSONValue]]] = [:]
    for type in try seed.metadata().schema.types {
        contents[type.name] = try seed.rows(of: type.name)
    }
    return contents
}

func sha256(of path: String) throws -> String {
    try FileDigest(ofFile: path).sha256
}

/// Thrown by a progress handler to interrupt a build.
struct Interruption: Error {}
