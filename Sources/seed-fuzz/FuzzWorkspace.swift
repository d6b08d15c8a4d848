import Dispatch
import Foundation
import SeedSyncDemo
import SeedSyncModel
import SeedSyncSQL
import SeedSyncSQLiteStore
import SeedSyncSeed
import SeedSyncStore

/// The files the stateful targets work on, in a directory of their own (on `/dev/shm` when one can
/// be made there: the server store syncs every commit) that is removed when the process exits: a server store
/// holding a small demo dataset, an unfinished seed the importer's applier writes to, and a finished
/// seed that manifests are compared with.
final class FuzzWorkspace: @unchecked Sendable {
    let directory: URL
    /// The server's store, shared by `commit` and `push` (a process runs one target).
    let store: SQLiteSyncStore
    /// A finished seed of the store's rows.
    let seedPath: String
    private var writer: SeedWriter?

    /// A workspace on `/dev/shm`, or in the temporary directory when one there cannot be made (a
    /// small or full `/dev/shm`, as containers have); the error says what failed in each.
    static func make() throws -> FuzzWorkspace {
        var failures: [String] = []
        for base in ["/dev/shm", NSTemporaryDirectory()] where FileManager.default.fileExists(atPath: base) {
            do { return try FuzzWorkspace(in: base) } catch { failures.append("in \(base): \(error)") }
        }
        throw WorkspaceError(description: failures.joined(separator: "; "))
    }

    struct WorkspaceError: Error, CustomStringConvertible {
        let description: String
    }

    /// A workspace in a new directory under `base` (a name of its own: `mkdtemp`), removed at exit.
    private init(in base: String) throws {
        var template = Array(URL(fileURLWithPath: base).appendingPathComponent("seedsync-fuzz-XXXXXX").path.utf8CString)
        guard mkdtemp(&template) != nil else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        directory = URL(
            fileURLWithPath: String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self))
        Self.removeAtExit(directory.path)
        let storePath = directory.appendingPathComponent("server.sqlite").path
        try Blocking.run {
            try await SQLiteSyncStore.create(at: storePath, schema: DemoDataset.schema) { store in
                _ = try await DemoDataset(events: 30, locations: 5, seed: 1).load(into: store)
            }
        }
        store = try SQLiteSyncStore(path: storePath)
        seedPath = directory.appendingPathComponent("reference.seed").path
        let store = self.store
        let seedPath = self.seedPath
        try Blocking.run {
            let writer = try await Self.seedWriter(at: seedPath + ".build", from: store)
            try await writer.finish(to: seedPath)
        }
    }

    /// A seed being built at `path` with every row of `store`, as `seed-build` downloads it.
    private static func seedWriter(at path: String, from store: SQLiteSyncStore) async throws -> SeedWriter {
        let revision = try await store.revisions().revision
        let writer = try await SeedWriter.create(at: path, schema: DemoDataset.schema, revision: revision)
        for type in DemoDataset.schema.types {
            _ = try await writer.insert(FlatSnapshotPage(store.snapshotPage(of: type.name, after: nil, limit: 100_000)))
        }
        return writer
    }

    // MARK: Targets

    func commit(_ input: [UInt8]) {
        guard let changeSet = try? ChangeSet(json: JSONParser.parse(input)) else { return }
        let store = self.store
        _ = try? Blocking.run { try await store.commit(changeSet) }
    }

    /// Pushes each change set twice: the second answer, read back from what the first stored,
    /// must equal the first.
    func push(_ input: [UInt8]) {
        guard let request = try? SyncRequest(json: JSONParser.parse(input)) else { return }
        let store = self.store
        for pushed in request.changeSets {
            let push: @Sendable () async throws -> PushResult = {
                try await store.push(pushed, retention: .seconds(86_400), version: request.schemaVersion)
            }
            guard let first = try? Blocking.run(push) else { continue }
            let again = try? Blocking.run(push)
            precondition(
                again == first, "pushed again, \(pushed.id) was answered \(String(describing: again)), not \(first)")
        }
    }

    /// Reads a snapshot page as a build does, as cells, and as values: the two must agree, and a
    /// row the build takes must be one the values' checks take.
    private func readPage(_ input: [UInt8]) {
        let flat = try? FlatSnapshotPage(json: input)
        let values = (try? JSONParser.parse(input)).flatMap { try? SnapshotPage(json: $0) }
        precondition(
            flat.map(SnapshotPage.init) == values, "the page read as cells differs from the page read as values")
        guard let flat, let type = DemoDataset.schema.types.first(where: { $0.name == flat.type }),
            (try? PageRows(flat, type: type, after: nil)) != nil
        else { return }
        for row in flat.rows.rows {
            precondition((try? type.validateSnapshotRow(row)) != nil, "a page's row was taken that its checks refuse")
        }
    }

    /// Applies a change set after the seed's revision, or reads a snapshot page as a build does.
    func apply(_ input: [UInt8]) {
        readPage(input)
        guard let json = try? JSONParser.parse(input) else { return }
        guard let changeSet = try? ChangeSet(json: json), let writer = try? seedWriter() else { return }
        _ = try? Blocking.run {
            let revision = try await writer.revision()
            guard revision < .max else { return revision }
            var next = changeSet
            next.revision = revision + 1
            return try await writer.apply([next])
        }
    }

    private func seedWriter() throws -> SeedWriter {
        if let writer { return writer }
        let store = self.store
        let path = directory.appendingPathComponent("applied.seed").path
        let writer = try Blocking.run { try await Self.seedWriter(at: path, from: store) }
        self.writer = writer
        return writer
    }

    /// Every check a seed passes before the importer installs it, then `seed-verify`'s.
    func checkSeed(_ input: [UInt8]) {
        let path = directory.appendingPathComponent("input.seed").path
        DatabaseFiles(path).remove()
        guard FileManager.default.createFile(atPath: path, contents: Data(input)) else { return }
        do {
            let file = try SeedFile(path: path)
            defer { try? file.close() }
            let metadata = try file.metadata()
            _ = try file.quickCheck()
            _ = try file.structureProblem(metadata)
            _ = try file.rowCounts()
            try file.checkContent(metadata)
            for type in metadata.schema.types { _ = try file.rows(of: type.name) }
        } catch {}
        let options = SeedVerifier.Options(temporaryDirectory: directory)
        _ = try? Blocking.run { try await SeedVerifier.verify(path, options: options) }
    }

    /// Reads a manifest, compares it with the reference seed, and writes it back.
    func readManifest(_ input: [UInt8]) {
        let path = directory.appendingPathComponent("input.manifest.json").path
        guard FileManager.default.createFile(atPath: path, contents: Data(input)),
            let manifest = try? SeedManifest.read(from: path)
        else { return }
        if let seed = try? SeedFile(path: seedPath), let metadata = try? seed.metadata(),
            let counts = try? seed.rowCounts(), let digest = try? FileDigest(ofFile: seedPath)
        {
            _ = manifest.mismatches(digest: digest, metadata: metadata, rowCounts: counts)
            try? seed.close()
        }
        let again = try? JSONDecoder().decode(SeedManifest.self, from: manifest.jsonData())
        precondition(
            again == manifest,
            "the manifest changed when written: \(String(decoding: manifest.jsonData(), as: UTF8.self))")
    }

    /// Removes `path` when the process exits (every workspace tried, a failed one too).
    private static func removeAtExit(_ path: String) {
        if workspacePaths.isEmpty {
            atexit {
                for path in workspacePaths { try? FileManager.default.removeItem(atPath: path) }
            }
        }
        workspacePaths.append(path)
    }
}

nonisolated(unsafe) private var workspacePaths: [String] = []

/// Runs async code to its end from synchronous code (libFuzzer calls the targets on its own thread).
enum Blocking {
    private final class Outcome<T>: @unchecked Sendable {
        var result: Result<T, any Error>?
    }

    static func run<T>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
        let outcome = Outcome<T>()
        let done = DispatchSemaphore(value: 0)
        Task {
            do { outcome.result = .success(try await body()) } catch { outcome.result = .failure(error) }
            done.signal()
        }
        done.wait()
        return try outcome.result!.get()
    }
}
