public import SeedSyncModel
import SeedSyncSeed

/// A batch of server change sets about to be committed that writes or deletes rows with pending
/// local edits, or rows a ``SyncEngine`` observer marks as being edited (see
/// ``SeedImporter/Configuration/beforeMerge``): which rows, and what the server sends.
///
/// The batch is not applied before the handler returns, so an app can let it go at once, or
/// first end an edit of those rows (an open form committed or closed), up to
/// ``SeedImporter/Configuration/mergeNoticeTimeout`` seconds.
///
/// ```swift
/// configuration.beforeMerge = { notice in
///     guard let keys = notice.rows["events"], keys.contains(openEvent) else { return }
///     await editor.finish()  // the batch waits for the user's edit to end
/// }
/// ```
public struct MergeNotice: Sendable, Hashable {
    /// The keys of the rows with pending local edits, or being edited, that the batch writes or
    /// deletes, by type.
    public var rows: [String: [JSONValue]]
    /// The server's change sets, in order.
    public var changeSets: [ChangeSet]

    public init(rows: [String: [JSONValue]], changeSets: [ChangeSet]) {
        self.rows = rows
        self.changeSets = changeSets
    }
}

extension ImportSession {
    /// Tells ``SeedImporter/Configuration/beforeMerge`` about `batch` when it writes rows with
    /// pending local edits or rows being edited, and waits for it to return, at most
    /// ``SeedImporter/Configuration/mergeNoticeTimeout`` seconds (the handler is then cancelled).
    func noticeBeforeMerge(_ batch: [CheckedChangeSet], pending: PendingChanges, in database: LocalDatabase)
        async throws
    {
        guard let handler = configuration.beforeMerge else { return }
        let shadowed = Set(try await database.read { db in try pending.outbox.shadowedRows(in: db) })
            .union(await editing?.rowsBeingEdited() ?? [])
        guard !shadowed.isEmpty else { return }
        var rows: [String: [JSONValue]] = [:]
        var seen = Set<RowID>()
        for changes in batch.flatMap(\.changes) {
            let type = changes.type.name
            for key in changes.creates.map(\.key) + changes.updates.map(\.key) + changes.deletes {
                guard let string = key.keyString, case let row = RowID(type: type, key: string),
                    shadowed.contains(row), seen.insert(row).inserted
                else { continue }
                rows[type, default: []].append(key)
            }
        }
        guard !rows.isEmpty else { return }
        // The catch-up keeps each change set as it came while there is a handler to show it to.
        let notice = MergeNotice(rows: rows, changeSets: batch.compactMap(\.source))
        await Self.wait(for: handler, notice, seconds: configuration.mergeNoticeTimeout)
        try Task.checkCancellation()
    }

    /// Waits until `handler(notice)` returns, `seconds` pass or this task is cancelled, whichever
    /// comes first; then cancels the handler without waiting for it: a handler that ignores
    /// cancellation never holds the batch past its time.
    static func wait(
        for handler: @escaping @Sendable (MergeNotice) async -> Void, _ notice: MergeNotice, seconds: Double
    ) async {
        let (ended, end) = AsyncStream<Void>.makeStream()
        let handling = Task {
            await handler(notice)
            end.yield()
        }
        let timing = Task {
            try? await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
            end.yield()
        }
        var first = ended.makeAsyncIterator()
        _ = await first.next()
        handling.cancel()
        timing.cancel()
        end.finish()
    }
}
