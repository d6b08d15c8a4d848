public import Foundation
public import GRDB
public import SeedSyncClient
public import SeedSyncModel

/// A long-lived sync engine for an app: start it once, and it keeps the database current.
///
/// It installs or replaces the database as ``SeedImporter`` does, then loops: push the local
/// edits and catch up (one ``SeedImporter/run(onEvent:)``), then wait with a live read (`LiveWait`:
/// `GET /v1/changes` with `live`, which HTTP caches collapse, or `POST /v1/sync` with `"wait"` from a
/// server without live reads; see `docs/PROTOCOL.md`) until the server has something newer, catch
/// up, and again; a whole run comes every ``Options/wholeRunInterval`` seconds. A server change
/// reaches the app within the time the server takes to answer its held request, not at the next
/// poll. When the server cannot be reached (or fails), the engine backs off with jitter
/// (1 s doubling to 60 s by default) and says when it tries again; a failure a retry cannot fix (a
/// refused token, a database that does not fit the server) waits for ``syncNow()``. A token that
/// may read but not push keeps the database current; the local edits stay queued.
///
/// The steps are the transitions of `EngineMachine`; the edit sessions' rules (``beginEdit()``)
/// are `EditSessions`' (see `EditMachine`). The engine runs them and lets the app steer:
/// ``syncNow()`` (a user's refresh: it ends a wait or a backoff at once, and follows a run going on
/// with another), ``pause()`` and ``resume()``, ``stop()``. Its ``State`` is an `AsyncSequence` a
/// screen can show (``states()``).
///
/// ```swift
/// let engine = SyncEngine(configuration: .init(seed: seedPath, database: databasePath, server: server))
/// await engine.start()
/// Task { for await state in engine.states() { statusLabel = "\(state)" } }
/// // pull to refresh
/// await engine.syncNow()
/// // the app goes to the background
/// await engine.stop()
/// ```
public actor SyncEngine {
    /// What the engine is doing, as an app shows it.
    public enum State: Sendable, CustomStringConvertible {
        /// Not started.
        case idle
        /// Installing, pushing or catching up.
        case syncing
        /// Caught up, waiting (a live read, or a held sync request) for the next change.
        case waiting
        /// Paused by ``SyncEngine/pause()``.
        case paused
        /// The server could not be reached (or failed); the next attempt is at `retryAt`.
        case offline(retryAt: Date)
        /// A failure a retry cannot fix; ``SyncEngine/syncNow()`` tries again.
        case failed(any Error)
        /// Stopped by ``SyncEngine/stop()``: the database is closed.
        case stopped

        public var description: String {
            switch self {
            case .idle: "idle"
            case .syncing: "syncing"
            case .waiting: "waiting"
            case .paused: "paused"
            case .offline(let retryAt): "offline, retrying at \(retryAt.formatted(.iso8601))"
            case .failed(let error): "failed: \(error)"
            case .stopped: "stopped"
            }
        }
    }

    /// How the engine waits and backs off.
    public struct Options: Sendable {
        /// Seconds the server may hold a live sync request (it caps it; 55 by default).
        public var wait: Int
        /// The delays between attempts while the server cannot be reached; `maxAttempts` is ignored:
        /// the engine tries until it is stopped.
        public var backoff: RetryPolicy
        /// Seconds between whole runs while the engine waits: 300. Until this long after the last
        /// whole run, a wait that brought a commit is followed by a catch-up alone (reads of the log,
        /// which caches answer) and one that ended without is followed by another wait; then by a
        /// whole run, which also asks the origin for the schema (`GET /v1/schema`) and migrates to a
        /// new version. A wait that fails, or ``SyncEngine/syncNow()``, runs whole at once.
        public var wholeRunInterval: Int

        public init(
            wait: Int = 55, backoff: RetryPolicy = RetryPolicy(maxAttempts: 1, baseDelay: 1, maxDelay: 60),
            wholeRunInterval: Int = 300
        ) {
            self.wait = wait
            self.backoff = backoff
            self.wholeRunInterval = wholeRunInterval
        }
    }

    public nonisolated let importer: SeedImporter
    public nonisolated let options: Options
    /// The app's handler, then the observers' queue: every event of every run, in order.
    private let onEvent: @Sendable (ImportEvent) -> Void
    private nonisolated let observers: Observers
    private nonisolated let observed: AsyncStream<Observed>.Continuation
    private var observing: Task<Void, Never>?
    /// How the engine waits once caught up (its client makes no retry of its own: the engine backs off).
    private let waiter: LiveWait
    /// The way of the next wait, and the revision it was learnt at (a live read's cursor holds
    /// for that revision alone).
    private var waitWay: (revision: Int64, way: LiveWait.Way) = (-1, .liveRead(.start))
    /// When the last whole run started (see ``Options/wholeRunInterval``).
    private var lastWholeRun: ContinuousClock.Instant?
    private var machine = EngineMachine()
    private var state: State = .idle
    private var watchers: [UUID: AsyncStream<State>.Continuation] = [:]
    private var loop: Task<Void, Never>?
    /// The step going on (a run, a wait, a backoff), cancelled to interrupt it.
    private var step: Task<StepOutcome, Never>?
    private var interrupted = false
    /// The loop, parked while nothing is to be done (paused, failed), until an event.
    private var parked: CheckedContinuation<EngineMachine.Action, Never>?
    /// The edit sessions, and their rules: handed to each run, which lets them in.
    private nonisolated let sessions: EditSessions
    /// Edit sessions that paused the engine, waiting for the loop to park.
    private var quiet: [CheckedContinuation<Void, Never>] = []
    /// The server's schema in the database's version, as the last run read it: what a push
    /// catches up against (``EngineMachine/edited()``); `nil` until a run has said.
    private var served: SchemaInfo?

    /// An engine over `configuration`; `onEvent` gets every ``ImportEvent`` of every run (an
    /// ``ImportEvent/applied(_:)`` per committed change set).
    public init(
        configuration: SeedImporter.Configuration, options: Options = Options(),
        onEvent: @escaping @Sendable (ImportEvent) -> Void = { _ in }
    ) {
        self.init(configuration: configuration, app: nil, options: options, onEvent: onEvent)
    }

    /// An engine that writes through the app's own GRDB `DatabasePool` or `DatabaseQueue` (see
    /// ``SeedImporter/init(configuration:database:)``): the app's `ValueObservation`s see every
    /// change set, replacement and ``write(_:)`` with no code of SeedSync's.
    ///
    /// ```swift
    /// let pool = try DatabasePool(path: databasePath)
    /// let engine = SyncEngine(configuration: .init(seed: seedPath, database: pool.path, server: server), database: pool)
    /// await engine.start()
    /// ```
    public init(
        configuration: SeedImporter.Configuration, database: any DatabaseWriter, options: Options = Options(),
        onEvent: @escaping @Sendable (ImportEvent) -> Void = { _ in }
    ) {
        self.init(configuration: configuration, app: database, options: options, onEvent: onEvent)
    }

    private init(
        configuration: SeedImporter.Configuration, app: (any DatabaseWriter)?, options: Options,
        onEvent: @escaping @Sendable (ImportEvent) -> Void
    ) {
        let observers = Observers(database: app?.path ?? configuration.database)
        sessions = EditSessions(rowsBeingEdited: { await observers.rowsBeingEdited() })
        importer =
            if let app { SeedImporter(configuration: configuration, database: app) } else {
                SeedImporter(configuration: configuration)
            }
        self.options = options
        let (stream, observed) = AsyncStream.makeStream(of: Observed.self)
        self.observers = observers
        self.observed = observed
        self.onEvent = { event in
            onEvent(event)
            observed.yield(.event(event))
        }
        observing = Task {
            for await item in stream {
                switch item {
                case .event(let event): await observers.handle(event)
                case .local(let changes): await observers.handle(changes)
                }
            }
            await observers.finish()
        }
        var server = configuration.server
        server.retry = .none
        waiter = LiveWait(client: SyncClient(configuration: server), seconds: options.wait)
    }

    /// Starts the loop; a second call does nothing.
    public func start() {
        guard loop == nil else { return }
        var first = machine.start()
        if !sessions.isEmpty, machine.pause() { first = machine.next }
        loop = Task { await self.run(from: first) }
    }

    /// Opens an edit session (see ``EditSession``): returns once the engine's current
    /// transaction has ended, and the engine applies nothing until the session is committed or
    /// cancelled.
    public func beginEdit() async -> EditSession {
        // A run going on keeps what it downloaded: the session waits for its step in progress.
        let (id, route) = await sessions.begin(engineIsPaused: machine.phase == .paused)
        if route == .pause(pausesEngine: true) { pause() }
        if case .pause = route, loop != nil, parked == nil, machine.phase == .paused {
            await withCheckedContinuation { quiet.append($0) }
        }
        return EditSession(engine: self, id: id)
    }

    /// Whether the edit session `id` is open.
    nonisolated func isEditing(_ id: UUID) -> Bool { sessions.isOpen(id) }

    /// Ends the edit session `id` (once), and does what its end sets off (``EditMachine/Ending``):
    /// a committed edit is pushed, and the last session that paused the engine resumes it, unless
    /// the app paused it.
    func endEdit(_ id: UUID, committed: Bool = false) {
        guard let ending = sessions.end(id, committed: committed) else { return }
        if ending.pushes { edited() }
        if ending.resumesEngine { resume() }
    }

    /// A user-initiated sync: ends a wait, a backoff or a failure at once; a run going on is
    /// followed by another at once. Call it when the app's token changes its scope values (a new
    /// login): the run brings the database in line with the new grant (PROTOCOL.md §10).
    public func syncNow() {
        if machine.syncNow() { interrupt() }
        unpark()
    }

    /// Stops applying: a run going on stops after its current transaction (the database stays at
    /// its last good revision); nothing runs until ``resume()``.
    public func pause() {
        if machine.pause() { interrupt() }
        unpark()
    }

    /// A local edit was committed: push it, without a whole run when the database is installed
    /// (see ``EngineMachine/edited()``).
    private func edited() {
        if machine.edited() { interrupt() }
        unpark()
    }

    /// Runs again after ``pause()``.
    public func resume() {
        _ = machine.resume()
        unpark()
    }

    /// Stops the engine and returns once its last run has closed the database.
    public func stop() async {
        if machine.stop() { interrupt() }
        unpark()
        guard let loop else {
            await finish()  // never started
            return
        }
        await loop.value
    }

    /// The engine's states as they change, starting with the current one; ends after ``State/stopped``.
    public nonisolated func states() -> AsyncStream<State> {
        let (stream, continuation) = AsyncStream.makeStream(of: State.self, bufferingPolicy: .bufferingNewest(16))
        let id = UUID()
        Task { await self.watch(id, continuation) }
        continuation.onTermination = { _ in Task { await self.unwatch(id) } }
        return stream
    }

    /// The current state.
    public var currentState: State { state }

    // MARK: - Observation and local writes

    /// The changes to the rows of `type`, from this call on: one ``ObservedChanges`` per committed
    /// transaction that touched them (a batch of server change sets, a push's results, a local write), or that may
    /// have touched any row (an install, a replacement, a migration: ``ObservedChanges/isReload``).
    /// Ends when the engine stops.
    ///
    /// ```swift
    /// for await changes in await engine.observe(type: "events") {
    ///     reload(changes.inserted + changes.updated); remove(changes.deleted)
    /// }
    /// ```
    public nonisolated func observe(type: String) async -> AsyncStream<ObservedChanges> {
        let (stream, continuation) = AsyncStream.makeStream(of: ObservedChanges.self)
        let id = UUID()
        await observers.add(id, type: type, continuation)
        continuation.onTermination = { [observers] _ in Task { await observers.remove(id) } }
        return stream
    }

    /// The row `type[key]`: as it is now, then again after each committed transaction that
    /// changed it (its fields `nil` once it is deleted). A row created locally with a temporary
    /// key is followed to the real key the server gives it (``ObservedRow/key``). Ends when the
    /// engine stops.
    ///
    /// With `editing`, the row counts as being edited for as long as the observation lasts (a
    /// form open on it): a batch of server change sets that writes it waits for
    /// ``SeedImporter/Configuration/beforeMerge`` (see ``MergeNotice``), as a row with a pending
    /// local edit does.
    ///
    /// ```swift
    /// for await row in await engine.observe(type: "events", key: 42, editing: true) {
    ///     show(row.fields)  // nil once deleted
    /// }
    /// ```
    public nonisolated func observe(type: String, key: JSONValue, editing: Bool = false) async
        -> AsyncStream<ObservedRow>
    {
        let (stream, continuation) = AsyncStream.makeStream(of: ObservedRow.self)
        let id = UUID()
        await observers.add(id, type: type, key: key, editing: editing, continuation)
        continuation.onTermination = { [observers] _ in Task { await observers.remove(id) } }
        return stream
    }

    /// ``SeedImporter/write(_:)`` through the engine: the edits are applied and queued at once,
    /// the observers are told, and the engine pushes them without waiting for the next commit:
    /// once a run has installed the database, in a push of their own (a catch-up from the
    /// database's revision: no lock wait, no schema request, no install check), else in a run.
    @discardableResult
    public func write<T: Sendable>(_ body: @escaping @Sendable (LocalChanges) throws -> T) async throws -> T {
        let result = try await writeLocally(body)
        edited()
        return result
    }

    /// ``SeedImporter/write(_:)``, told to the observers.
    func writeLocally<T: Sendable>(_ body: @escaping @Sendable (LocalChanges) throws -> T) async throws -> T {
        let (result, changes) = try await importer.writer.writeRecording(body)
        observed.yield(.local(changes))
        return result
    }

    // MARK: - The loop

    /// What the observers' queue carries.
    private enum Observed: Sendable {
        case event(ImportEvent)
        case local([RowChange])
    }

    private enum StepOutcome: Sendable {
        case ran(EngineOutcome)
        case caughtUpWithoutPushing(revision: Int64)
        /// A wait from `revision` ended as `outcome`, or with a failure the next run handles (`nil`).
        case waited(LiveWait.Outcome?, from: Int64)
        case slept
        case failed(any Error)
    }

    private func run(from first: EngineMachine.Action) async {
        var action = first
        while true {
            switch action {
            case .stop:
                await finish()
                return
            case .idle:
                // Woken by one event while another followed (an edit's push, then its resume).
                guard machine.next == .idle else {
                    action = machine.next
                    continue
                }
                if machine.phase == .paused { publish(.paused) }
                releaseQuiet()
                action = await withCheckedContinuation { parked = $0 }
            case .sync, .push:
                // No run starts (an install or a replacement) under an open edit session.
                if !sessions.isEmpty {
                    await sessions.waitUntilNoneOpen()
                    action = machine.next  // a stop or a pause asked meanwhile comes first
                    continue
                }
                publish(.syncing)
                if action == .sync { lastWholeRun = .now }
                action = await perform(sync(pushing: action == .push))
            case .wait(let revision, let version):
                publish(.waiting)
                action = await perform(wait(after: revision, schemaVersion: version))
            case .sleep(let attempt):
                let delay = options.backoff.delay(afterAttempt: attempt, retryAfter: nil)
                publish(.offline(retryAt: Date().addingTimeInterval(delay)))
                action = await perform(sleep(delay))
            }
        }
    }

    /// Lets the edit sessions waiting for the loop to park go on.
    private func releaseQuiet() {
        for waiter in quiet { waiter.resume() }
        quiet = []
    }

    /// Ends the observations and the state sequences, with ``State/stopped`` last.
    private func finish() async {
        releaseQuiet()
        observed.finish()
        await observing?.value
        publish(.stopped)
        for watcher in watchers.values { watcher.finish() }
        watchers = [:]
    }

    /// Runs `work` as the interruptible step, then feeds its outcome to the machine.
    private func perform(_ work: @escaping @Sendable () async -> StepOutcome) async -> EngineMachine.Action {
        interrupted = false
        let task = Task(operation: work)
        step = task
        let outcome = await task.value
        step = nil
        if interrupted {
            interrupted = false
            return machine.next
        }
        switch outcome {
        case .ran(let outcome):
            served = outcome.served
            return machine.runSucceeded(
                revision: outcome.report.toRevision, schemaVersion: outcome.report.schemaVersion)
        case .caughtUpWithoutPushing(let revision):
            return machine.runSucceeded(revision: revision, schemaVersion: nil)
        case .waited(let outcome, let revision):
            let recent = lastWholeRun.map { .now - $0 < .seconds(options.wholeRunInterval) } ?? false
            guard let outcome, recent, served != nil else { return machine.waitEnded(then: .wholeRun) }
            waitWay = (revision, outcome.next)
            return machine.waitEnded(then: outcome.moved ? .catchUp : .waitAgain)
        case .slept:
            return machine.backoffEnded()
        case .failed(let error):
            let retryable = Self.isRetryable(error)
            let next = machine.failed(retryable: retryable)
            if !retryable, machine.phase == .failed { publish(.failed(error)) }
            return next
        }
    }

    /// One run, or with `pushing` a push (``SeedImporter/push(against:editing:onEvent:)``) when a
    /// run has said what the server serves. A token that may not push
    /// (``ImportError/Code/pushForbidden``) still caught up: the engine goes on waiting from there,
    /// the local change sets kept for a token that may.
    private func sync(pushing: Bool) -> @Sendable () async -> StepOutcome {
        let pushesAgainst = pushing ? served : nil
        return { [importer, onEvent, sessions] in
            sessions.startRun()
            defer { sessions.endRun() }
            let caughtUp = LockedValue<Int64?>(nil)
            let handle: @Sendable (ImportEvent) -> Void = { event in
                if case .caughtUp(let revision) = event { caughtUp.set(revision) }
                onEvent(event)
            }
            do {
                if let pushesAgainst {
                    return .ran(try await importer.push(against: pushesAgainst, editing: sessions, onEvent: handle))
                }
                return .ran(try await importer.run(editing: sessions, onEvent: handle))
            } catch let error as ImportError where error.code == .pushForbidden {
                guard let revision = caughtUp.get() else { return .failed(error) }
                return .caughtUpWithoutPushing(revision: revision)
            } catch {
                return .failed(error)
            }
        }
    }

    /// A wait for the next commit (``LiveWait``); its change sets are left to the catch-up that
    /// follows, which applies them with everything else from the database's revision.
    private func wait(after revision: Int64, schemaVersion: Int?) -> @Sendable () async -> StepOutcome {
        var way = waitWay.way
        if waitWay.revision != revision, case .liveRead = way { way = .liveRead(.start) }
        let scopes = served?.scopes.map(ScopeList.init)
        return { [waiter, way] in
            do {
                let outcome = try await waiter.wait(
                    after: revision, schemaVersion: schemaVersion, scopes: scopes, way: way)
                return .waited(outcome, from: revision)
            } catch let error as SyncClientError where Self.isRetryable(error) {
                return .failed(error)
            } catch {
                // Anything else (the history compacted past the revision, say) is the next run's to handle.
                return .waited(nil, from: revision)
            }
        }
    }

    private func sleep(_ seconds: Double) -> @Sendable () async -> StepOutcome {
        {
            try? await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
            return .slept
        }
    }

    /// A failure that may pass: the server unreachable, or failing (5xx, 429).
    static func isRetryable(_ error: any Error) -> Bool {
        guard let error = error as? SyncClientError else { return false }
        return error.code == .unreachable || error.code == .serverError
    }

    private func interrupt() {
        interrupted = step != nil
        step?.cancel()
    }

    private func unpark() {
        sessions.releaseWaitingRuns()
        guard let parked else { return }
        self.parked = nil
        parked.resume(returning: machine.next)
    }

    // MARK: - States

    private func publish(_ new: State) {
        state = new
        for watcher in watchers.values { watcher.yield(new) }
    }

    private func watch(_ id: UUID, _ continuation: AsyncStream<State>.Continuation) {
        continuation.yield(state)
        if case .stopped = state {
            continuation.finish()
            return
        }
        watchers[id] = continuation
    }

    private func unwatch(_ id: UUID) {
        watchers[id] = nil
    }
}
