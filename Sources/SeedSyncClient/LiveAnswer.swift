public import SeedSyncModel

/// The answer to a live read (``SyncClient/liveChanges(after:chain:schemaVersion:cursor:scopes:wait:)``).
///
/// ```swift
/// let answer = try await client.liveChanges(after: revision, schemaVersion: 1, cursor: .start)
/// if answer.response.changeSets.isEmpty { /* the server's live wait ended with no commit */ }
/// ```
public struct LiveAnswer: Sendable {
    /// The change sets after the revision asked from: none when the server's wait ended without a
    /// commit, or when the server does not hold live reads.
    public var response: SyncResponse
    /// The cursor of the next live read (`SeedSync-Live-Cursor`); `nil` when the server did not say
    /// one: it does not hold live reads (it answered at once), and a client waits with
    /// `POST /v1/sync` and `wait` instead.
    public var cursor: LiveCursor?

    public init(response: SyncResponse, cursor: LiveCursor?) {
        self.response = response
        self.cursor = cursor
    }
}
