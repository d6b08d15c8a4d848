import Foundation
import SeedSyncBuild
import SeedSyncClient
import SeedSyncDemo
import SeedSyncModel
import SeedSyncSQLiteStore
import SeedSyncSeed
import SeedSyncServer
import SeedSyncStore

/// A server store with a mutation history, served on loopback, in a temporary directory.
public struct ServedStore: Sendable {
    public let url: URL
    public let store: any MaintainedSyncStore
    public let directory: URL

    /// `store` (of any backend), served at `url`, with its files in `directory`.
    public init(url: URL, store: any MaintainedSyncStore, directory: URL) {
        self.url = url
        self.store = store
        self.directory = directory
    }

    public func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    /// A client of the server that does not retry.
    public func client(token: String = liveServerToken) -> SyncClient {
        SyncClient(configuration: .init(serverURL: url, token: token, requestTimeout: 10, retry: .none))
    }

    public func builder(
        _ output: String, pageSize: Int = 50, gzip: Bool = false, resume: Bool = false, types: [String]? = nil,
        token: String = liveServerToken, register: Bool = false, signingKeys: [SeedSigningKey] = []
    ) -> SeedBuilder {
        SeedBuilder(
            client: client(token: token),
            options: .init(
                output: path(output), types: types, pageSize: pageSize, syncLimit: 7, gzip: gzip, resume: resume,
                register: register, signingKeys: signingKeys))
    }
}

/// Runs `body` against a demo store (or `schema` filled by the change generator) served live,
/// with the server's configuration changed by `configure`.
public func withServedStore(
    schema: DatasetSchema? = nil,
    events: Int = 300,
    locations: Int = 20,
    changes: Int = 40,
    configure: @escaping @Sendable (inout ServerConfiguration) -> Void = { _ in },
    _ body: @escaping @Sendable (ServedStore) async throws -> Void
) async throws {
    try await withTemporaryDirectory { directory in
        let store =
            if let schema {
                try await Fixtures.emptyStore(schema, in: directory)
            } else {
                try await Fixtures.demoStore(events: events, locations: locations, seed: 3, in: directory)
            }
        try await ChangeGenerator.mutate(store, changes: changes, seed: 5)
        try await withLiveServer(store, configure: configure) { url in
            try await body(ServedStore(url: url, store: store, directory: directory))
        }
    }
}

/// Every row of every type of the seed-format database at `path` (a seed or an imported
/// database), as the server's snapshot pages give them.
public func contents(ofSeed path: String) throws -> [String: [[JSONValue]]] {
    let seed = try SeedFile(path: path)
    defer { try? seed.close() }
    var contents: [String: [[JSONValue]]] = [:]
    for type in try seed.metadata().schema.types {
        contents[type.name] = try seed.rows(of: type.name)
    }
    return contents
}

/// The SHA-256 of the file at `path`.
public func sha256(of path: String) throws -> String {
    try FileDigest(ofFile: path).sha256
}
