package import SeedSyncModel

/// Answers fetched one ahead: while the caller handles one, the next is already being requested
/// and parsed. The one way snapshot pages and change feeds are read, by the builder and the
/// importer alike.
///
/// Each fetch gives an element and the cursor of the next one, or `nil` when the element was the
/// last. A failed fetch ends the sequence with its error; an iterator that is dropped, or whose
/// task is cancelled, cancels the request it had started.
///
/// ```swift
/// for try await (page, bytes) in client.snapshotPages(of: "events", after: nil, limit: 5_000) {
///     try await writer.insert(page)  // the next page downloads meanwhile
/// }
/// ```
package struct PrefetchingSequence<Element: Sendable, Cursor: Sendable>: AsyncSequence, Sendable {
    private let start: Cursor
    private let fetch: @Sendable (Cursor) async throws -> (element: Element, next: Cursor?)

    package init(
        from start: Cursor, fetch: @escaping @Sendable (Cursor) async throws -> (element: Element, next: Cursor?)
    ) {
        self.start = start
        self.fetch = fetch
    }

    package func makeAsyncIterator() -> Iterator {
        Iterator(fetch: fetch, first: start)
    }

    package struct Iterator: AsyncIteratorProtocol {
        private let fetch: @Sendable (Cursor) async throws -> (element: Element, next: Cursor?)
        private let request: Request

        fileprivate init(
            fetch: @escaping @Sendable (Cursor) async throws -> (element: Element, next: Cursor?), first: Cursor
        ) {
            self.fetch = fetch
            request = Request()
            request.task = Task { try await fetch(first) }
        }

        /// The next element, starting the request of the one after it; `nil` after the last.
        package mutating func next() async throws -> Element? {
            guard let task = request.task else { return nil }
            request.task = nil
            let (element, next) = try await withTaskCancellationHandler {
                try await task.value
            } onCancel: {
                task.cancel()
            }
            let fetch = self.fetch
            request.task = next.map { cursor in Task { try await fetch(cursor) } }
            return element
        }
    }

    /// The request in flight; cancelled when the iterator that started it goes away.
    private final class Request: @unchecked Sendable {
        // Only the iterator's `next()` reads and writes it, never concurrently (an async iterator
        // is not shared).
        var task: Task<(element: Element, next: Cursor?), any Error>?

        deinit { task?.cancel() }
    }
}

extension SyncClient {
    /// The snapshot of `type` from `after` (`nil`: the first row), page by page with the bytes
    /// each took, one page ahead, until the page whose `next` is `null`.
    package func snapshotPages(
        of type: String, after: JSONValue?, limit: Int, schemaVersion: Int?, fields: [String]? = nil
    ) -> PrefetchingSequence<(page: SnapshotPage, bytes: Int64), JSONValue?> {
        PrefetchingSequence(from: after) { [self] after in
            let before = bytesReceived
            let page = try await snapshotPage(
                of: type, after: after, limit: limit, schemaVersion: schemaVersion, fields: fields)
            return ((page, bytesReceived - before), page.next == .null ? .none : .some(page.next))
        }
    }

    /// The change sets after `revision`, answer by answer, one ahead, until an answer says the
    /// server has no more (`hasMore` false). Each answer is requested from the revision the one
    /// before ended at.
    ///
    /// With a `schemaVersion` and `readsLog`, the log is read with
    /// ``changes(after:schemaVersion:limit:)``, which a cache in front of the server can answer,
    /// up to and including the head (kept by caches for one second at most); a server without
    /// `GET /v1/changes` (404) is read with ``sync(from:limit:pushing:schemaVersion:wait:)``.
    /// Without them, every answer comes from `sync`, from the origin: for a client that asks again
    /// at the head and must see the newest revision. `limit` applies to the `sync` requests: log
    /// reads leave the length to the server, so that every client asks for the same addresses.
    package func changeFeed(
        from revision: Int64, limit: Int, schemaVersion: Int?, readsLog: Bool = true
    ) -> PrefetchingSequence<SyncResponse, FeedCursor> {
        let start = FeedCursor(revision: revision, readsLog: readsLog && schemaVersion != nil)
        return PrefetchingSequence(from: start) { [self] cursor in
            if cursor.readsLog, let schemaVersion {
                do {
                    let response = try await changes(after: cursor.revision, schemaVersion: schemaVersion)
                    return (
                        response, response.hasMore ? FeedCursor(revision: response.maxRevision, readsLog: true) : nil
                    )
                } catch let error as SyncClientError where error.status == 404 {
                    // A server that predates the log reads: `sync` below, for this answer and the rest.
                }
            }
            let response = try await sync(from: cursor.revision, limit: limit, schemaVersion: schemaVersion)
            return (response, response.hasMore ? FeedCursor(revision: response.maxRevision, readsLog: false) : nil)
        }
    }
}

/// Where a change feed goes on: from `revision`, by a log read (`GET /v1/changes`) or by `POST /v1/sync`.
package struct FeedCursor: Sendable {
    package var revision: Int64
    package var readsLog: Bool
}
