import Foundation
package import SeedSyncModel

/// Answers fetched ahead: while the caller handles one, the next ones are already being requested
/// and parsed. The one way snapshot pages and change feeds are read, by the builder and the
/// importer alike.
///
/// Each fetch gives an element and the cursor of the next one, or `nil` when the element was the
/// last. One task fetches them in order, as long as fewer than `ahead` elements wait to be taken
/// and, for a sequence that weighs its elements (``weighing(_:upTo:)``), those waiting weigh less
/// than the budget. A failed fetch ends the sequence with its error; an iterator that is dropped,
/// or whose task is cancelled, cancels the request it had started.
///
/// ```swift
/// for try await (page, bytes) in client.snapshotPages(of: "events", after: nil, limit: 5_000) {
///     try await writer.insert(page)  // the next page downloads meanwhile
/// }
/// ```
package struct PrefetchingSequence<Element: Sendable, Cursor: Sendable>: AsyncSequence, Sendable {
    private let start: Cursor
    private let ahead: Int
    private let weight: @Sendable (Element) -> Int
    private let budget: Int
    private let fetch: @Sendable (Cursor) async throws -> (element: Element, next: Cursor?)

    /// A sequence from `start` that keeps up to `ahead` elements (at least one) fetched before
    /// they are asked for.
    package init(
        from start: Cursor, ahead: Int = 1,
        fetch: @escaping @Sendable (Cursor) async throws -> (element: Element, next: Cursor?)
    ) {
        self.init(start: start, ahead: ahead, weight: { _ in 0 }, budget: .max, fetch: fetch)
    }

    private init(
        start: Cursor, ahead: Int, weight: @escaping @Sendable (Element) -> Int, budget: Int,
        fetch: @escaping @Sendable (Cursor) async throws -> (element: Element, next: Cursor?)
    ) {
        self.start = start
        self.ahead = Swift.max(1, ahead)
        self.weight = weight
        self.budget = Swift.max(1, budget)
        self.fetch = fetch
    }

    /// The same elements, each passed through `transform` in the task that fetched it: the work
    /// is done ahead, with the fetch, while the caller handles the element before. (A weighing is
    /// not carried over: weigh the mapped elements.)
    package func map<T: Sendable>(_ transform: @escaping @Sendable (Element) -> T) -> PrefetchingSequence<T, Cursor> {
        PrefetchingSequence<T, Cursor>(from: start, ahead: ahead) { [fetch] cursor in
            let (element, next) = try await fetch(cursor)
            return (transform(element), next)
        }
    }

    /// The same sequence, fetching no further while the elements waiting weigh `budget` or more
    /// (the one that crosses it is still taken): it reads ahead by how much the elements hold
    /// (rows, bytes), not only by their number.
    package func weighing(_ weight: @escaping @Sendable (Element) -> Int, upTo budget: Int) -> Self {
        Self(start: start, ahead: ahead, weight: weight, budget: budget, fetch: fetch)
    }

    package func makeAsyncIterator() -> Iterator {
        let pipe = Pipe(ahead: ahead, budget: budget)
        let (start, fetch, weight) = (start, fetch, weight)
        pipe.start {
            var cursor = start
            while await pipe.waitForRoom() {
                do {
                    let (element, next) = try await fetch(cursor)
                    pipe.put(element, weight: weight(element))
                    guard let next else { return pipe.finish(.success(())) }
                    cursor = next
                } catch {
                    return pipe.finish(.failure(error))
                }
            }
        }
        return Iterator(owner: Owner(pipe: pipe))
    }

    package struct Iterator: AsyncIteratorProtocol {
        fileprivate let owner: Owner

        /// The next element, once fetched; `nil` after the last, and after a failed fetch's error
        /// was thrown. Once the task that waits here is cancelled, it throws `CancellationError`.
        package mutating func next() async throws -> Element? {
            let pipe = owner.pipe
            return try await withTaskCancellationHandler {
                try await pipe.take()
            } onCancel: {
                pipe.cancel()
            }
        }
    }

    /// Cancels the fetching when the last copy of the iterator goes away.
    fileprivate final class Owner: Sendable {
        let pipe: Pipe
        init(pipe: Pipe) { self.pipe = pipe }
        deinit { pipe.cancel() }
    }

    /// The elements fetched and not taken yet, between the fetching task and the iterator.
    fileprivate final class Pipe: @unchecked Sendable {
        // Everything below is read and written under `lock`; continuations are resumed outside it.
        private let lock = NSLock()
        private let ahead: Int
        private let budget: Int
        private var waiting: [(element: Element, weight: Int)] = []
        private var weight = 0
        /// How the fetching ended; a failure is thrown once, then the sequence gives `nil`.
        private var end: Result<Void, any Error>?
        private var cancelled = false
        private var consumer: CheckedContinuation<Element?, any Error>?
        private var producer: CheckedContinuation<Bool, Never>?
        private var task: Task<Void, Never>?

        init(ahead: Int, budget: Int) {
            self.ahead = ahead
            self.budget = budget
        }

        private var hasRoom: Bool { waiting.count < ahead && weight < budget }

        func start(_ body: @escaping @Sendable () async -> Void) {
            let task = Task { await body() }
            lock.withLock { self.task = task }
        }

        /// Waits until another element may be fetched: `false` once cancelled.
        func waitForRoom() async -> Bool {
            await withCheckedContinuation { continuation in
                let answer: Bool? = lock.withLock {
                    if cancelled { return false }
                    if hasRoom { return true }
                    producer = continuation
                    return nil
                }
                if let answer { continuation.resume(returning: answer) }
            }
        }

        func put(_ element: Element, weight elementWeight: Int) {
            let consumer: CheckedContinuation<Element?, any Error>? = lock.withLock {
                defer { self.consumer = nil }
                if self.consumer == nil {
                    waiting.append((element, elementWeight))
                    weight += elementWeight
                }
                return self.consumer
            }
            consumer?.resume(returning: element)
        }

        func finish(_ result: Result<Void, any Error>) {
            let consumer: CheckedContinuation<Element?, any Error>? = lock.withLock {
                guard end == nil else { return nil }
                // A consumer waiting now is given the outcome; the ones after it get `nil`.
                end = self.consumer == nil ? result : .success(())
                defer { self.consumer = nil }
                return self.consumer
            }
            consumer?.resume(with: result.map { nil })
        }

        func take() async throws -> Element? {
            try await withCheckedThrowingContinuation { continuation in
                let (result, producer): (Result<Element?, any Error>?, CheckedContinuation<Bool, Never>?) =
                    lock.withLock {
                        if cancelled { return (.failure(CancellationError()), nil) }
                        if !waiting.isEmpty {
                            let first = waiting.removeFirst()
                            weight -= first.weight
                            let producer = hasRoom ? self.producer : nil
                            if producer != nil { self.producer = nil }
                            return (.success(first.element), producer)
                        }
                        if let end {
                            self.end = .success(())
                            return (end.map { nil }, nil)
                        }
                        consumer = continuation
                        return (nil, nil)
                    }
                producer?.resume(returning: true)
                if let result { continuation.resume(with: result) }
            }
        }

        /// Stops the fetching: the request under way is cancelled, a waiting `take` throws
        /// `CancellationError`.
        func cancel() {
            let (consumer, producer, task) = lock.withLock {
                cancelled = true
                if end == nil { end = .failure(CancellationError()) }
                defer { (self.consumer, self.producer) = (nil, nil) }
                return (self.consumer, self.producer, self.task)
            }
            task?.cancel()
            consumer?.resume(throwing: CancellationError())
            producer?.resume(returning: false)
        }
    }
}

extension SyncClient {
    /// The snapshot of `type` from `after` (`nil`: the first row), page by page with the bytes
    /// each took, one page ahead, until the page whose `next` is `null`.
    package func snapshotPages(
        of type: String, after: JSONValue?, limit: Int, schemaVersion: Int?, fields: [String]? = nil,
        notBefore: Int64? = nil, scopes: ScopeList? = nil
    ) -> PrefetchingSequence<(page: FlatSnapshotPage, bytes: Int64), JSONValue?> {
        PrefetchingSequence(from: after) { [self] after in
            let before = bytesReceived
            let page = try await flatSnapshotPage(
                of: type, after: after, limit: limit, schemaVersion: schemaVersion, fields: fields,
                notBefore: notBefore, scopes: scopes)
            return ((page, bytesReceived - before), page.next == .null ? .none : .some(page.next))
        }
    }

    /// The change sets after `revision`, answer by answer, `ahead` answers ahead, until an answer says the
    /// server has no more (`hasMore` false). Each answer is requested from the revision the one
    /// before ended at.
    ///
    /// With a `schemaVersion` and `readsLog`, the log is read with
    /// ``changes(after:chain:schemaVersion:limit:scopes:)``, which a cache in front of the server can answer,
    /// up to and including the head (kept by caches for one second at most); a server without
    /// `GET /v1/changes` (404) is read with ``sync(from:chain:limit:pushing:schemaVersion:wait:)``.
    /// Without them, every answer comes from `sync`, from the origin: for a client that asks again
    /// at the head and must see the newest revision. `limit` applies to the `sync` requests: log
    /// reads leave the length to the server, so that every client asks for the same addresses.
    /// `scopes`, a reader's values, are named in the log reads' addresses (`sync` reads for the
    /// token's grant).
    package func changeFeed(
        from revision: Int64, chain: HistoryChain? = nil, limit: Int, schemaVersion: Int?, readsLog: Bool = true,
        ahead: Int = 1, scopes: ScopeList? = nil
    ) -> PrefetchingSequence<SyncResponse, FeedCursor> {
        let start = FeedCursor(revision: revision, chain: chain, readsLog: readsLog && schemaVersion != nil)
        return PrefetchingSequence(from: start, ahead: ahead) { [self, scopes] cursor in
            if cursor.readsLog, let schemaVersion {
                do {
                    let response = try await changes(
                        after: cursor.revision, chain: cursor.chain, schemaVersion: schemaVersion, scopes: scopes)
                    return (response, FeedCursor(after: response, readsLog: true))
                } catch let error as SyncClientError where error.status == 404 {
                    // A server that predates the log reads: `sync` below, for this answer and the rest.
                }
            }
            let response = try await sync(
                from: cursor.revision, chain: cursor.chain, limit: limit, schemaVersion: schemaVersion)
            return (response, FeedCursor(after: response, readsLog: false))
        }
    }
}

/// Where a change feed goes on: from `revision` (whose history chain is `chain`, when known), by a
/// log read (`GET /v1/changes`) or by `POST /v1/sync`.
package struct FeedCursor: Sendable {
    package var revision: Int64
    package var chain: HistoryChain?
    package var readsLog: Bool

    /// After `response`: from its `maxRevision` when it has more, else none.
    init?(after response: SyncResponse, readsLog: Bool) {
        guard response.hasMore else { return nil }
        self.init(revision: response.maxRevision, chain: response.chain, readsLog: readsLog)
    }

    init(revision: Int64, chain: HistoryChain?, readsLog: Bool) {
        self.revision = revision
        self.chain = chain
        self.readsLog = readsLog
    }
}
