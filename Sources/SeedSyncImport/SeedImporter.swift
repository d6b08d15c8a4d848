public import Foundation
public import GRDB
public import SeedSyncClient
import SeedSyncModel
public import SeedSyncSeed

/// Installs a shipped seed on first run, then keeps the database caught up with the server
/// through incremental sync from the seed's revision: `seed-import` as a library.
///
/// One ``run()``:
/// 1. takes the database's lock (`DATABASE.lock`; one importer at a time, see ``Configuration/lockTimeout``);
/// 2. asks the server for its schema (`GET /v1/schema`);
/// 3. when there is no database, verifies the seed and installs it: copy (or decompress) into
///    `DATABASE.installing`, check, fsync, rename into place, fsync the folder, switch to WAL. An
///    interrupted install leaves no database, never part of one. This step works offline (an
///    unreachable or failing server), but not against a server that refuses the token;
/// 4. when the seed is newer than the database (``Configuration/reseedIfNewer``), replaces the
///    database with it in one transaction;
/// 5. checks that the database is for the server's dataset and schema version;
/// 6. syncs from the database's revision until `hasMore` is false, applying change sets in
///    transactions of bounded size, each storing the revision it reaches; a change set that does
///    not fit stops the sync with the database at its last good revision;
/// 7. on 410 `history_expired`, reinstalls from the seed when it is recent enough, else downloads a
///    full snapshot (as `seed-build` does) and swaps it in, then goes on syncing.
///
/// ```swift
/// let importer = SeedImporter(configuration: .init(
///     seed: Bundle.main.path(forResource: "events", ofType: "sqlite.gz")!,
///     database: appSupport.appendingPathComponent("events.sqlite").path,
///     server: .init(serverURL: URL(string: "https://sync.example.com")!, token: token)
/// ))
/// for try await event in importer.events() {
///     if case .applied(let changeSet) = event { refresh(changeSet) }
/// }
/// ```
public struct SeedImporter: Sendable {
    public struct Configuration: Sendable {
        /// The shipped seed, plain or `.gz`; its manifest is read from beside it when present. Ship
        /// the manifest with a `.gz` seed: without it, checking whether the seed is newer than the
        /// database means decompressing it on every run, and a fresh app cannot weigh it.
        ///
        /// A run that installs the database without ``seedURL`` asks the server for the newest
        /// seed it offers (`GET /v1/seeds`: of the schema version the app wants, holding the scope
        /// values the token grants, registered with the address where it is published,
        /// `seed-build --register --published-at`) and weighs the ways in by the bytes each would
        /// download (``WayIn``): this seed and its catch-up, the offered one and its catch-up, and
        /// a snapshot. It takes the cheapest, downloading an offered seed as from ``seedURL``
        /// (``ImportEvent/choseWayIn(_:)``, ``ImportEvent/foundPublishedSeed(url:revision:)``).
        /// Empty when the app ships none; without a server to ask, a shipped seed is installed.
        public var seed: String
        /// The app's database; its folder is created when needed.
        public var database: String
        /// Where the seed is published, when the app ships none (or a newer one is wanted): the
        /// address of the seed file, plain or `.gz`, with its manifest beside it
        /// (`NAME.manifest.json`); ``seed`` is then not read. A run that installs the database
        /// downloads the seed into `DATABASE.seed/` first, resuming what an earlier run left
        /// (`Range`, `If-Range`), checks it against its manifest (and its signature, with
        /// ``trustedKeys``), installs it and removes the download. Progress is reported as
        /// ``ImportEvent/downloadingSeed(_:)``. The server's token goes with the requests only
        /// when the address is on the server's origin. Later runs do not read it: there is no
        /// newer seed to compare (``reseedIfNewer`` does nothing), and a history that expired
        /// is recovered by a snapshot download.
        ///
        /// ```swift
        /// configuration.seedURL = URL(string: "https://cdn.example.com/seeds/events.sqlite.gz")
        /// ```
        public var seedURL: URL?

        /// Whether the app ships a seed (``seed``, without ``seedURL``): only a shipped seed is
        /// compared with the database on each run.
        var shipsSeed: Bool { seedURL == nil && !seed.isEmpty }
        /// The server, with the request timeout, response-size limit and retry policy.
        public var server: SyncClient.Configuration
        /// The schema version the app is built for; a seed with another is refused, and so is an
        /// installed database with another that the seed does not replace.
        public var expectedSchemaVersion: Int?
        /// Replace the database with the seed when the seed is newer: a higher schema version, or
        /// the same one at a later revision.
        public var reseedIfNewer: Bool
        /// Change sets per `POST /v1/sync` request (the server caps it). Log reads
        /// (`GET /v1/changes`, how catch-ups read) end where the server's blocks end instead, so that
        /// every client asks for the same addresses.
        public var syncLimit: Int
        /// Rows per transaction, about: change sets are grouped until they reach it (a larger
        /// change set is one transaction on its own), and while the server has more and nothing
        /// waits to be pushed, the answers read are held until they reach it. The first
        /// transactions of a catch-up hold less (a sixteenth of it, doubling), so that writing
        /// starts at once, and while one transaction is written the answers after it are read and
        /// checked, up to about as many rows again (and one answer more): a catch-up holds about
        /// twice this many rows in memory, and with a ``beforeMerge`` handler each change set also
        /// as it came, to show it in a ``MergeNotice``. Larger transactions write each page of a large database fewer times
        /// (`seed-import` uses 50,000: about 30 % faster into a million rows than 5,000, see
        /// `docs/PERFORMANCE.md`); smaller ones hold less in memory and keep the app's own writes
        /// from waiting long for the writer. A catch-up held in one transaction
        /// (``catchUpCacheMiB``) hands each answer to the writer as it comes, and this bounds the
        /// rows read ahead and waiting for it instead.
        public var maxRowsPerTransaction: Int
        /// The page cache, in MiB, of a catch-up that holds one transaction open across its answers
        /// (the importer's own connection, with no edit session, merge handler or local change set
        /// to push): the pages it changes stay there until its one commit, each written once (see
        /// `docs/PERFORMANCE.md`, case 3). It bounds the catch-up's memory for pages: past it,
        /// SQLite writes changed pages to the WAL early (slower, never wrong). Such a catch-up
        /// reports its change sets (``ImportEvent/applied(_:)``, ``ImportEvent/progress(revision:serverRevision:)``)
        /// at its end, all at once (it commits every ``maxRowsPerCommit`` rows or
        /// ``maxSecondsPerCommit`` seconds too). 0 applies every batch in a transaction of its own instead, reported as each
        /// commits.
        public var catchUpCacheMiB: Int
        /// Rows after which a catch-up held in one transaction (``catchUpCacheMiB``) commits and
        /// goes on in a new one: a process killed in a longer catch-up keeps what was committed.
        public var maxRowsPerCommit: Int
        /// Seconds after which a catch-up held in one transaction commits and goes on in a new one,
        /// whatever its rows: another writer of the database (a ``LocalWriter`` of the app,
        /// `seed-import write`) waits for the writer's lock at most about this long, well inside
        /// the 10 seconds it waits before it gives up.
        public var maxSecondsPerCommit: Double
        /// Seconds to wait for another importer of the same database before giving up.
        public var lockTimeout: Double
        /// What a server change to a row with a pending local edit does to the edit (the server
        /// wins by default; see ``ConflictResolution``).
        public var conflicts: ConflictResolution
        /// Called before a batch of server change sets that writes rows with pending local edits,
        /// or rows a ``SyncEngine`` observer marks as being edited, is committed (see
        /// ``MergeNotice``); the batch waits until it returns.
        public var beforeMerge: (@Sendable (MergeNotice) async -> Void)?
        /// Seconds a batch waits for ``beforeMerge`` at most; the batch is then applied.
        public var mergeNoticeTimeout: Double
        /// The keys one of which must have signed the seed's manifest; empty (the default): the
        /// seed is used on its manifest's SHA-256 or its content digest alone. A seed that is not
        /// signed by a trusted key is refused (``ImportError/Code/untrustedSeed``), and a database
        /// that is already there goes on without it.
        ///
        /// ```swift
        /// configuration.trustedKeys = TrustedKeys([try SeedPublicKey("MCowBQYDK2VwAyEA…")])
        /// ```
        public var trustedKeys: TrustedKeys

        public init(
            seed: String,
            database: String,
            server: SyncClient.Configuration,
            expectedSchemaVersion: Int? = nil,
            reseedIfNewer: Bool = true,
            syncLimit: Int = 1000,
            maxRowsPerTransaction: Int = 5000,
            catchUpCacheMiB: Int = 128,
            maxRowsPerCommit: Int = 1_000_000,
            maxSecondsPerCommit: Double = 2,
            lockTimeout: Double = 30,
            conflicts: ConflictResolution = .serverWins,
            beforeMerge: (@Sendable (MergeNotice) async -> Void)? = nil,
            mergeNoticeTimeout: Double = 30,
            trustedKeys: TrustedKeys = TrustedKeys(),
            seedURL: URL? = nil
        ) {
            self.trustedKeys = trustedKeys
            self.seedURL = seedURL
            self.seed = seed
            self.database = database
            self.server = server
            self.expectedSchemaVersion = expectedSchemaVersion
            self.reseedIfNewer = reseedIfNewer
            self.syncLimit = syncLimit
            self.maxRowsPerTransaction = maxRowsPerTransaction
            self.catchUpCacheMiB = catchUpCacheMiB
            self.maxRowsPerCommit = maxRowsPerCommit
            self.maxSecondsPerCommit = maxSecondsPerCommit
            self.lockTimeout = lockTimeout
            self.conflicts = conflicts
            self.beforeMerge = beforeMerge
            self.mergeNoticeTimeout = mergeNoticeTimeout
        }
    }

    public let configuration: Configuration
    /// The app's own connection to the database, when it handed one over (``init(configuration:database:)``).
    public let database: (any DatabaseWriter)?

    /// An importer that opens the database at ``Configuration/database`` itself, for each run and
    /// each write, and closes it after.
    public init(configuration: Configuration) {
        self.configuration = configuration
        database = nil
    }

    /// An importer that writes through the app's own GRDB connection, so that the app's
    /// `ValueObservation` and `DatabaseRegionObservation` see every synced change, install and
    /// replacement. ``Configuration/database`` becomes `database.path`.
    ///
    /// The app may open its `DatabasePool` before the seed is installed: an empty database (no
    /// table) takes the seed, copied into it page by page. The importer never closes the
    /// connection, and needs its foreign keys on (GRDB's default).
    ///
    /// ```swift
    /// let pool = try DatabasePool(path: appSupport.appendingPathComponent("events.sqlite").path)
    /// let importer = SeedImporter(configuration: .init(seed: seedPath, database: pool.path, server: server), database: pool)
    /// let titles = ValueObservation.tracking { db in try String.fetchAll(db, sql: "SELECT title FROM events") }
    /// // titles.values(in: pool) yields again after each change set the importer commits
    /// try await importer.run()
    /// ```
    public init(configuration: Configuration, database: any DatabaseWriter) {
        var configuration = configuration
        configuration.database = database.path
        self.configuration = configuration
        self.database = database
    }

    /// Installs when needed and catches up.
    ///
    /// - Throws: ``ImportError`` for a bad seed or database, a lock held too long, a mismatch
    ///   with the server or a change set that does not fit; `SyncClientError` for network and
    ///   server failures after the last retry. The database stays at its last good revision.
    @discardableResult
    public func run() async throws -> ImportReport {
        try await run { _ in }
    }

    /// ``run()``, reporting each step to `onEvent` as it happens; the last event is
    /// ``ImportEvent/finished(_:)``.
    @discardableResult
    public func run(onEvent: @escaping @Sendable (ImportEvent) -> Void) async throws -> ImportReport {
        try await run(editing: nil, onEvent: onEvent).report
    }

    /// ``run(onEvent:)`` for a ``SyncEngine``, whose edit sessions the run lets in through `editing`.
    func run(editing: EditSessions?, onEvent: @escaping @Sendable (ImportEvent) -> Void) async throws
        -> EngineOutcome
    {
        try await withSession(editing: editing, lockTimeout: configuration.lockTimeout, onEvent: onEvent) {
            try await $0.run()
        }
    }

    /// A ``SyncEngine``'s push of its committed edits into the database a run has installed: a
    /// catch-up against `served` (``EngineOutcome/served``), without the lock wait (another importer
    /// at work fails it at once), the schema request, the install check or a migration
    /// (``ImportSession/push(against:)``). The engine runs whole when it fails.
    func push(against served: SchemaInfo, editing: EditSessions, onEvent: @escaping @Sendable (ImportEvent) -> Void)
        async throws -> EngineOutcome
    {
        try await withSession(editing: editing, lockTimeout: 0, onEvent: onEvent) { try await $0.push(against: served) }
    }

    /// Runs `step` in a session under the database's lock, waiting `lockTimeout` seconds for it at most.
    private func withSession(
        editing: EditSessions?, lockTimeout: Double, onEvent: @escaping @Sendable (ImportEvent) -> Void,
        _ step: (ImportSession) async throws -> ImportReport
    ) async throws -> EngineOutcome {
        if let database { _ = try LocalDatabase.file(of: database) }
        do {
            try FileSystem.createFolder(for: configuration.database)
        } catch let error as SeedError {
            throw ImportError(error, otherwise: .invalidDatabase)
        }
        let lock = try await ImportLock.acquire(for: configuration.database, timeout: lockTimeout)
        defer { lock.release() }
        let session = ImportSession(
            configuration: configuration, appDatabase: database, editing: editing, emit: onEvent)
        let report = try await step(session)
        onEvent(.finished(report))
        return EngineOutcome(report: report, served: session.served)
    }

    /// ``run()`` as an asynchronous sequence of events, ending with ``ImportEvent/finished(_:)``
    /// or the error that stopped the run.
    ///
    /// Events are buffered until they are read. Ending the iteration early cancels the run, which
    /// stops between transactions.
    public func events() -> AsyncThrowingStream<ImportEvent, any Error> {
        AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    try await run { continuation.yield($0) }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}

/// What a run or a push of a ``SyncEngine`` ends with.
struct EngineOutcome: Sendable {
    var report: ImportReport
    /// The server's schema in the database's version, as the run last read it: what the engine's
    /// next push catches up against.
    var served: SchemaInfo?
}
