public import Foundation
public import SeedSyncModel
public import SeedSyncStore

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What `seed-server status` shows an operator at a terminal: the store's state (revision, the
/// compaction floor, the schema versions served, the registered seeds) and, given a running
/// server's address, what that process holds (its live requests, the revision it has seen).
///
/// ```swift
/// var status = try await ServerStatus(store: store)
/// try await status.readProcess(at: URL(string: "http://127.0.0.1:8080")!, adminToken: token)
/// print(status)
/// ```
public struct ServerStatus: Codable, Sendable {
    /// A registered seed, as the status lists it.
    public struct Seed: Codable, Sendable, Hashable {
        public var sha256: String
        public var revision: Int64
        public var schemaVersion: Int
        public var retired: Bool
    }

    /// What a running server process says in its `/metrics`.
    public struct Process: Codable, Sendable, Hashable {
        /// The address asked.
        public var url: String
        /// Live requests it holds now: live reads and `POST /v1/sync` with `wait`.
        public var liveRequests: Int
        /// The newest revision it has seen committed.
        public var revision: Int64?
    }

    public var dataset: String
    /// The newest committed revision.
    public var revision: Int64
    /// The compaction floor: the oldest revision clients may sync from (`minRevision`).
    public var minRevision: Int64
    /// The schema versions served, oldest first.
    public var versions: [Int]
    /// The rows of each type at ``revision``.
    public var rowCounts: [String: Int]
    /// Every seed registered with `seed-build --register`, oldest revision first.
    public var seeds: [Seed]
    /// The running server's figures, after ``readProcess(at:adminToken:timeout:)``.
    public var process: Process?

    /// The state of `store`.
    public init(store: any SyncStore) async throws {
        let info = try await store.schemaInfo(version: nil, grant: .all)
        let newest = try await store.schemaInfo(version: info.servedVersions.last, grant: .all)
        dataset = newest.dataset
        revision = newest.revision
        minRevision = newest.minRevision
        versions = newest.servedVersions
        rowCounts = newest.rowCounts ?? [:]
        seeds = try await store.registeredSeeds().map {
            Seed(
                sha256: $0.sha256, revision: $0.revision, schemaVersion: $0.schemaVersion, retired: $0.retiredAt != nil)
        }
    }

    /// The oldest revision a registered seed that is not retired keeps the history back to: the
    /// floor compaction stops at; `nil` when none pins it.
    public var pinnedFloor: Int64? { seeds.filter { !$0.retired }.map(\.revision).min() }

    /// Reads the server process at `url`'s `/metrics` (an admin token's read) into ``process``.
    ///
    /// - Throws: ``ServerStatusError`` when the server cannot be reached, refuses the token, or
    ///   answers without the figures.
    public mutating func readProcess(at url: URL, adminToken: String, timeout: TimeInterval = 10) async throws {
        var request = URLRequest(url: url.appendingPathComponent("metrics"), timeoutInterval: timeout)
        request.setValue("Bearer \(adminToken)", forHTTPHeaderField: "Authorization")
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await URLSession.shared.data(for: request)
        } catch {
            throw ServerStatusError(
                .unreachable,
                "cannot reach \(url) for its /metrics: \(error.localizedDescription); is the server running there?")
        }
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        guard status == 200 else {
            throw ServerStatusError(
                .refused,
                "\(url)/metrics answered HTTP \(status)\(status == 401 || status == 403 ? ": give an admin token" : "")"
            )
        }
        let lines = String(decoding: data.prefix(4 << 20), as: UTF8.self).split(separator: "\n")
        func value(_ name: String) -> Double? {
            lines.first { $0.hasPrefix(name + " ") }.flatMap { $0.split(separator: " ").last }.flatMap { Double($0) }
        }
        guard let held = value("seedsync_waiting_requests") else {
            throw ServerStatusError(
                .notASeedServer, "\(url)/metrics has no seedsync_waiting_requests: is it a seed-server?")
        }
        process = Process(
            url: url.absoluteString, liveRequests: Int(held), revision: value("seedsync_revision").map { Int64($0) })
    }
}

extension ServerStatus: CustomStringConvertible {
    /// Lines for a terminal.
    public var description: String {
        var lines = [
            "dataset \(dataset), revision \(revision)",
            "history from revision \(minRevision) (compaction floor)"
                + (pinnedFloor.map { ", kept back to \($0) for registered seeds" } ?? ""),
            "schema versions served: \(versions.map(String.init).joined(separator: ", ")) (newest \(versions.last ?? 0))",
            "rows: "
                + (rowCounts.isEmpty
                    ? "(not counted)"
                    : rowCounts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")),
        ]
        let active = seeds.filter { !$0.retired }
        lines.append("registered seeds: \(active.count) pinning the history, \(seeds.count - active.count) retired")
        for seed in seeds {
            lines.append(
                "  \(seed.sha256.prefix(16))… revision \(seed.revision), schema version \(seed.schemaVersion)\(seed.retired ? ", retired" : "")"
            )
        }
        if let process {
            lines.append(
                "server \(process.url): \(process.liveRequests) live requests held, revision seen \(process.revision.map(String.init) ?? "unknown")"
            )
        }
        return lines.joined(separator: "\n")
    }
}

/// Why `seed-server status` could not read a running server: decide by ``code``.
public struct ServerStatusError: Error, CustomStringConvertible, Sendable {
    /// What failed; more codes may come.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let description: String

        /// The server did not answer (not running, another port, a timeout).
        public static let unreachable = Code(description: "unreachable")
        /// It answered `/metrics` with another status than 200 (a token that is not an admin token).
        public static let refused = Code(description: "refused")
        /// Its `/metrics` lacks SeedSync's figures.
        public static let notASeedServer = Code(description: "notASeedServer")
    }

    public var code: Code
    public var description: String

    public init(_ code: Code, _ description: String) {
        self.code = code
        self.description = description
    }
}
