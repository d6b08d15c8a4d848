public import Foundation
public import SeedSyncClient
import SeedSyncModel
import SeedSyncSQL
public import SeedSyncSeed

/// Builds a seed from a sync server over HTTP: `seed-build` as a library.
///
/// 1. Reads `/v1/schema` (the newest schema version, or ``Options/schemaVersion``); its revision
///    R0 is where the download starts. Pages and change sets are asked for in that version.
/// 2. Downloads every type through `/v1/snapshot` pages into `OUT.partial` (`SeedWriter`).
/// 3. Catches up through the change log (`GET /v1/changes`; `POST /v1/sync` on a server without
///    it) from R0 until `hasMore` is false, applying the change sets with
///    the importer's code (`SeedWriter/apply(_:)`), so the file equals the server at the final
///    revision even when the server changed during the download.
/// 4. Finishes the file (checks, `VACUUM INTO OUT.new`: compact, rollback journal), writes the `.gz`
///    copy when asked and the manifest, then renames them into place. Until then nothing exists at `OUT`.
/// 5. With ``Options/register``, records the seed on the server (`POST /v1/admin/seeds`).
///
/// ```swift
/// let builder = SeedBuilder(client: client, options: .init(output: "Snapshots/demo.sqlite"))
/// let report = try await builder.build()
/// print(report.manifest.sha256)
/// ```
///
/// An interrupted or failed download keeps `OUT.partial`; with ``Options/resume`` the next build
/// continues from the last complete page of each type. Data errors (a malformed page, a change set
/// that does not fit, an expired history) discard it instead: resuming could not help.
public struct SeedBuilder: Sendable {
    public struct Options: Sendable {
        /// The seed file to write.
        public var output: String
        /// The types to include, `nil` for all. Every type a chosen type references must be chosen too.
        public var types: [String]?
        /// Rows per snapshot page (the server caps it).
        public var pageSize: Int
        /// Change sets per `POST /v1/sync` request (the server caps it). Log reads
        /// (`GET /v1/changes`, how catch-ups read) end where the server's blocks end instead, so that
        /// every client asks for the same addresses.
        public var syncLimit: Int
        /// Also write `OUT.gz`.
        public var gzip: Bool
        /// The zlib level of `OUT.gz`, 1 (fastest) to 9 (smallest): 6, zlib's default, unless said.
        /// The manifest records it (`SeedManifest.Compressed.level`); the `.gz` file's bytes depend on
        /// the seed's and the level alone, so a rebuild at the same level is byte for byte the same.
        public var gzipLevel: Int
        /// Continue `OUT.partial` when there is one.
        public var resume: Bool
        /// The schema version to build, `nil` for the newest the server serves.
        public var schemaVersion: Int?
        /// Register the finished seed with the server (`POST /v1/admin/seeds`, an admin token), so
        /// that compaction keeps the history it needs to catch up.
        public var register: Bool
        /// Also write a seed per scope value, cut from the build in one pass (see ``ScopeSeeds``):
        /// `nil` for none.
        public var scopes: ScopeSeeds?
        /// The keys that sign every manifest the build writes (`SeedManifest.signed(with:)`);
        /// none: the manifests are unsigned.
        public var signingKeys: [SeedSigningKey]
        /// The address of the folder the built files will be published in (a CDN, a bucket), for
        /// ``register``: each seed is registered with the address of its file there (its `.gz`
        /// copy with ``gzip``), so that a fresh app with no seed finds it (`GET /v1/seeds`).
        ///
        /// ```swift
        /// options.publishedAt = URL(string: "https://cdn.example.com/seeds/")
        /// ```
        public var publishedAt: URL?

        public init(
            output: String, types: [String]? = nil, pageSize: Int = 10_000, syncLimit: Int = 1000, gzip: Bool = false,
            gzipLevel: Int = 6, resume: Bool = false, schemaVersion: Int? = nil, register: Bool = false,
            scopes: ScopeSeeds? = nil,
            signingKeys: [SeedSigningKey] = [], publishedAt: URL? = nil
        ) {
            self.publishedAt = publishedAt
            self.scopes = scopes
            self.signingKeys = signingKeys
            self.output = output
            self.types = types
            self.pageSize = pageSize
            self.syncLimit = syncLimit
            self.gzip = gzip
            self.gzipLevel = gzipLevel
            self.resume = resume
            self.schemaVersion = schemaVersion
            self.register = register
        }
    }

    public let client: SyncClient
    public let options: Options

    public init(client: SyncClient, options: Options) {
        self.client = client
        self.options = options
    }

    /// The work file beside the output.
    public var partialPath: String { files.partial.path }

    /// The output's files and the build's.
    var files: SeedFiles { SeedFiles(output: options.output) }

    /// Builds the seed, reporting progress to `progress` (which may throw to stop the build).
    ///
    /// - Throws: `SyncClientError` for network and server failures, `SeedError` for data that
    ///   does not fit and for file problems. Nothing is written at ``Options/output`` then.
    public func build(progress: @Sendable (BuildEvent) async throws -> Void = { _ in }) async throws -> BuildReport {
        let clock = ContinuousClock()
        let start = clock.now
        let bytesBefore = client.bytesReceived
        var run = BuildRun()
        let info = try await client.schema(version: options.schemaVersion)
        let schema = try SchemaSelection(info: info, types: options.types).schema
        let (writer, resumed) = try await openWriter(schema: schema, info: info)
        run.resumed = resumed
        SeedPublisher.removeLeftovers(of: files)
        let finished = files.finished
        let manifest: SeedManifest
        do {
            run.startRevision = try await writer.revision()
            try await progress(.started(revision: run.startRevision, rowCounts: info.rowCounts, resumed: resumed))
            // A reader of some scope values names them in its addresses, which caches may share.
            let scopes = info.scopes.map(ScopeList.init)
            try await download(
                into: writer, version: info.schemaVersion, notBefore: info.minRevision, scopes: scopes, run: &run,
                progress: progress)
            // The catch-up starts from the oldest page read (kept by the server or a cache).
            run.startRevision = try await writer.revision()
            run.mark("download", since: start, clock: clock)
            try await catchUp(
                writer, serverTypes: Set(info.types.map(\.name)), version: info.schemaVersion, scopes: scopes,
                run: &run, progress: progress)
            run.mark("catchUp", since: start, clock: clock)
            try await progress(.finishing)
            if let scopes = options.scopes { run.scopeSeeds = try await cut(writer, by: scopes, info: info) }
            try await writer.finish(to: finished)
        } catch {
            try? writer.close()
            let written = Self.size(of: partialPath)
            if !Self.isResumable(error) { try? SeedWriter.removeUnfinished(at: partialPath) }
            throw explain(error, written: (written, partialPath), run: run, info: info, schema: schema)
        }
        let finishedSize = Self.size(of: finished)
        do {
            manifest = try SeedPublisher(files: files, finished: finished, options: options).publish()
        } catch {
            // The publisher has removed what it wrote; the finished seed's size is what it needed room for.
            throw explain(error, written: (finishedSize, finished), run: run, info: info, schema: schema)
        }
        run.mark("finish", since: start, clock: clock)
        // Registered once published (a seed that is not there pins nothing), each cut seed with its value.
        var registered: RegisteredSeed?
        if options.register {
            registered = try await register(manifest)
            for index in run.scopeSeeds.indices {
                run.scopeSeeds[index].registered = try await register(run.scopeSeeds[index].manifest)
            }
        }
        run.seconds["total"] = (clock.now - start).seconds
        return BuildReport(
            output: options.output, manifestPath: SeedManifest.path(forSeed: options.output), manifest: manifest,
            startRevision: run.startRevision, resumed: run.resumed, pages: run.pages, changeSets: run.changeSets,
            bytesDownloaded: client.bytesReceived - bytesBefore, seconds: run.seconds, registered: registered,
            scopeSeeds: options.scopes == nil ? nil : run.scopeSeeds
        )
    }

    /// Records the seed of `manifest` with the server (`POST /v1/admin/seeds`), with its scope
    /// values and, with ``Options/publishedAt``, where its file is published.
    private func register(_ manifest: SeedManifest) async throws -> RegisteredSeed {
        let url = options.publishedAt.map { folder in
            folder.appendingPathComponent(manifest.gzip?.file ?? manifest.file).absoluteString
        }
        return try await client.register(
            SeedRegistration(
                sha256: manifest.sha256, revision: manifest.revision, schemaVersion: manifest.schemaVersion,
                scopes: manifest.scopes, url: url))
    }

    private func openWriter(schema: DatasetSchema, info: SchemaInfo) async throws -> (SeedWriter, Bool) {
        try FileSystem.createFolder(for: options.output)
        // A work file without tables is a build killed as it made the file: it starts over.
        if options.resume, FileManager.default.fileExists(atPath: partialPath),
            !SeedWriter.holdsNothing(at: partialPath)
        {
            let previous = try await SeedWriter.open(at: partialPath)
            try await checkResumable(previous, schema: schema, info: info)
            return (previous, true)
        }
        try SeedWriter.removeUnfinished(at: partialPath)
        return (
            try await SeedWriter.create(at: partialPath, schema: schema, revision: info.revision, scopes: info.scopes),
            false
        )
    }

    private func checkResumable(_ writer: SeedWriter, schema: DatasetSchema, info: SchemaInfo) async throws {
        let revision = try await writer.revision()
        let problem: String? =
            if writer.schema.hash != schema.hash {
                "it was started for another schema or type selection"
            } else if try await writer.scopes() != info.scopes {
                "it was started with a token of other scope values"
            } else if revision > info.revision {
                "it is at revision \(revision) but the server is at \(info.revision)"
            } else if revision < info.minRevision {
                "the server's history no longer reaches its revision \(revision) (minRevision \(info.minRevision))"
            } else {
                nil
            }
        if let problem {
            try writer.close()
            throw SeedError(.notResumable, "cannot resume \(partialPath): \(problem); build it again from the start")
        }
    }

    /// Downloads every incomplete type, one page ahead: the next page is requested and parsed
    /// while the current one is inserted. Pages are read at `notBefore` or later (the history's
    /// start), so that the catch-up from the oldest of them is still in the history.
    private func download(
        into writer: SeedWriter, version: Int, notBefore: Int64, scopes: ScopeList?, run: inout BuildRun,
        progress: @Sendable (BuildEvent) async throws -> Void
    ) async throws {
        let cursors = try await writer.cursors()
        for type in writer.schema.types {
            guard let cursor = cursors[type.name], !cursor.isComplete else { continue }
            for try await (page, bytes) in client.snapshotPages(
                of: type.name, after: cursor.after, limit: options.pageSize, schemaVersion: version,
                notBefore: notBefore, scopes: type.isScoped ? scopes : nil)
            {
                try Task.checkCancellation()
                let rows = try await writer.insert(page)
                run.pages += 1
                run.rows += rows
                try await progress(.page(type: type.name, rows: rows, bytes: bytes))
            }
        }
    }

    /// The change log from the seed's revision until the server has nothing more, one answer ahead;
    /// change sets of types left out of the seed are dropped, the revision still advances.
    private func catchUp(
        _ writer: SeedWriter, serverTypes: Set<String>, version: Int, scopes: ScopeList?, run: inout BuildRun,
        progress: @Sendable (BuildEvent) async throws -> Void
    ) async throws {
        let included = Set(writer.schema.types.map(\.name))
        let excluded = serverTypes.subtracting(included)
        let feed = client.changeFeed(
            from: try await writer.revision(), limit: options.syncLimit, schemaVersion: version, scopes: scopes)
        for try await response in feed {
            try Task.checkCancellation()
            let changeSets = response.changeSetsToApply.map { $0.removingChanges(ofTypes: excluded) }
            guard !changeSets.isEmpty else {
                // At the newest revision already: the answer's chain is the seed's anchor.
                if let chain = response.chain { try await writer.save(chain: chain, ifAt: response.maxRevision) }
                return
            }
            let revision = try await writer.apply(
                changeSets, chains: response.chainsToApply, mayFollowGap: response.scopes != nil)
            run.changeSets += changeSets.count
            try await progress(.caughtUp(changeSets: run.changeSets, revision: revision))
        }
    }

    /// `error`, with what a full volume needs: what the build had written, and about how much
    /// space a build of this dataset takes (the work file, the finished copy beside it while
    /// `VACUUM INTO` writes it, and the `.gz`). Other errors are returned as they are.
    ///
    /// - Parameter written: how many bytes the build had written, and to which file.
    private func explain(
        _ error: any Error, written file: (bytes: Int64, path: String), run: BuildRun, info: SchemaInfo,
        schema: DatasetSchema
    ) -> any Error {
        let written = file.bytes
        guard let error = error as? SeedError, error.code == .diskFull || error.code == .fileSizeLimit else {
            return error
        }
        let total = schema.types.reduce(0) { $0 + (info.rowCounts?[$1.name] ?? 0) }
        // The work file grows with the rows: scale what it held by the rows still to come.
        let seed = run.rows > 0 && !run.resumed && total > run.rows ? written * Int64(total) / Int64(run.rows) : written
        let progress = total > 0 && !run.resumed ? ", \(run.rows) of \(total) rows" : ""
        var text =
            "\(error). What the build wrote was removed\(written > 0 ? " (\(Self.size(written)) of \(file.path)\(progress))" : ""), so nothing was left behind."
        if seed > 0, error.code == .diskFull {
            text +=
                " A build of this dataset needs about \(Self.size(seed * (options.gzip ? 3 : 2))) free beside \(options.output) (the work file and the finished copy\(options.gzip ? ", then the .gz" : ""))."
        } else if seed > 0 {
            text += " The seed will be about \(Self.size(seed)); the limit must be above that."
        }
        return SeedError(error.code, text)
    }

    private static func size(of partial: String) -> Int64 {
        [partial, DatabaseFiles(partial).wal].reduce(0) { total, path in
            total + ((try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int64) ?? nil ?? 0)
        }
    }

    /// A size for people: `820 KB`, `3.4 MB`.
    private static func size(_ bytes: Int64) -> String {
        bytes < 1_000_000 ? "\(max(1, bytes / 1000)) KB" : String(format: "%.1f MB", Double(bytes) / 1_000_000)
    }

    /// Whether a later `--resume` could finish what this error interrupted.
    package static func isResumable(_ error: any Error) -> Bool {
        switch error {
        case let error as SyncClientError:
            error.code == .unreachable || error.code == .serverError || error.code == .unauthorized
                || error.code == .forbidden
        case is CancellationError: true
        // An I/O error or another process may pass; a full volume or the file-size limit would
        // fail the same way again, and bad data stays bad.
        case let error as SeedError: error.code == .fileSystem || error.code == .busy
        default: true
        }
    }
}

/// Counters of one build.
private struct BuildRun {
    var resumed = false
    var scopeSeeds: [ScopeSeed] = []
    var startRevision: Int64 = 0
    var pages = 0
    var rows = 0
    var changeSets = 0
    var seconds: [String: Double] = [:]
    private var lastMark: Double = 0

    mutating func mark(_ step: String, since start: ContinuousClock.Instant, clock: ContinuousClock) {
        let elapsed = (clock.now - start).seconds
        seconds[step] = elapsed - lastMark
        lastMark = elapsed
    }
}
