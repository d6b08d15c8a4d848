import SeedSyncClient
import SeedSyncModel

/// How a ``SyncEngine`` that is caught up waits for the next commit.
///
/// By **live reads** (`GET /v1/changes` with `live`, see ``SyncClient/liveChanges(after:chain:schemaVersion:cursor:scopes:wait:)``)
/// while the server holds them: a read HTTP caches collapse, so a cache in front of the origin
/// holds one request for every app at one revision. A server that does not say a live cursor (one
/// older than live reads), or a read that fails with 404 or 400, makes the engine wait with
/// `POST /v1/sync` and `"wait"` from then on, as before live reads. Pushes never take this way:
/// they go to the origin in the run that follows.
///
/// A wait's change sets are not applied here: the catch-up that follows reads them again (from a
/// cache, through the same addresses every app reads), with everything else from the database's
/// revision.
struct LiveWait: Sendable {
    /// The way of the next wait.
    enum Way: Equatable, Sendable {
        /// A live read from the database's revision with this cursor.
        case liveRead(LiveCursor)
        /// `POST /v1/sync` with `"wait"`.
        case heldSync
    }

    /// How a wait ended.
    struct Outcome: Equatable, Sendable {
        /// Whether the server has a revision after the one waited from.
        var moved: Bool
        /// The way of the next wait from the revision waited from (from another revision, a live
        /// read starts with ``LiveCursor/start``).
        var next: Way
    }

    /// The client, without retries of its own (the engine backs off).
    let client: SyncClient
    /// Seconds the server may hold a request (``SyncEngine/Options/wait``).
    let seconds: Int

    /// Waits from `revision` the way `way` says; `scopes`: the values a reader of some names in
    /// its log reads' addresses.
    ///
    /// An empty answer that comes at once is the way of a stale answer a cache kept (its cursor
    /// leads past it) or of a server that does not hold requests (`--max-wait 0`): a live read is
    /// made again at once with the new cursor, up to ``quickAnswers`` times (a cache keeps an empty
    /// answer for the wait and 5 s, so a chain of kept ones is two or three long), and only then does
    /// the engine sleep out the wait (polling such a server every `seconds`, not in a loop).
    func wait(after revision: Int64, schemaVersion: Int?, scopes: ScopeList?, way: Way) async throws -> Outcome {
        guard case .liveRead(var cursor) = way, let schemaVersion else {
            return try await heldSync(after: revision, schemaVersion: schemaVersion)
        }
        for attempt in 1...Self.quickAnswers {
            let start = ContinuousClock.now
            let answer: LiveAnswer
            do {
                answer = try await client.liveChanges(
                    after: revision, schemaVersion: schemaVersion, cursor: cursor, scopes: scopes, wait: seconds)
            } catch let error as SyncClientError where error.status == 404 || error.status == 400 {
                // A server (or a cache in front) that does not know live reads.
                return try await heldSync(after: revision, schemaVersion: schemaVersion)
            }
            guard let next = answer.cursor else {
                return try await heldSync(after: revision, schemaVersion: schemaVersion)
            }
            if answer.response.maxRevision > revision { return Outcome(moved: true, next: .liveRead(.start)) }
            cursor = next
            let elapsed = ContinuousClock.now - start
            if elapsed >= .seconds(1) { break }
            if attempt == Self.quickAnswers { try? await Task.sleep(for: .seconds(seconds) - elapsed) }
        }
        return Outcome(moved: false, next: .liveRead(cursor))
    }

    /// The quick empty answers to live reads followed at once before the engine sleeps out a wait.
    static var quickAnswers: Int { 4 }

    /// `POST /v1/sync` with `"wait"`. A server that does not hold requests (one older than live
    /// sync, or `--max-wait 0`) answers an empty wait at once: it is polled every `seconds`
    /// instead of in a loop.
    private func heldSync(after revision: Int64, schemaVersion: Int?) async throws -> Outcome {
        let start = ContinuousClock.now
        let answer = try await client.sync(from: revision, limit: 1, schemaVersion: schemaVersion, wait: seconds)
        let elapsed = ContinuousClock.now - start
        if answer.changeSets.isEmpty, answer.maxRevision <= revision, elapsed < .seconds(1) {
            try? await Task.sleep(for: .seconds(seconds) - elapsed)
        }
        return Outcome(moved: answer.maxRevision > revision || !answer.changeSets.isEmpty, next: .heldSync)
    }
}
