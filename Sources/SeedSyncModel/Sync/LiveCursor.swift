public import Foundation

/// The `live` value of a live read (`GET /v1/changes?after=R&schemaVersion=V&live=CURSOR`,
/// `docs/PROTOCOL.md` §5.3): what keeps a cache from answering a client with an empty answer it
/// kept from before the last commit.
///
/// A client's first live read from a revision says `live=0` (``start``). The server holds the
/// read until a later revision commits, or for its live wait (20 s by default), and says the
/// cursor of the next read in `SeedSync-Live-Cursor` (``headerName``):
///
/// - after an answer with change sets (or, for a reader of some scope values, one that moved its
///   `maxRevision`), ``start`` again: every client at the new revision asks the same address;
/// - after an empty answer, ``next(every:now:)``: the number of whole waits since 1970, or the
///   cursor asked with plus one when that is not higher. The next address is new (no cache holds
///   an answer for it), clients given the same answer go on together, and clients whose waits
///   ended in the same interval meet on one address again. The cursor only rises, so two kept
///   answers can never send clients back and forth between their addresses.
///
/// ```swift
/// var cursor = LiveCursor.start
/// let answer = try await client.liveChanges(after: revision, schemaVersion: 1, cursor: cursor)
/// cursor = answer.cursor ?? .start  // nil: the server does not hold live reads
/// ```
public struct LiveCursor: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The value, 0 or more.
    public var value: Int64

    public init(_ value: Int64) {
        self.value = max(0, value)
    }

    /// The cursor of a client's first live read from a revision: 0.
    public static let start = LiveCursor(0)

    /// `SeedSync-Live-Cursor`, the header of a live read's answer that says the next cursor.
    public static let headerName = "SeedSync-Live-Cursor"

    /// The cursor an empty answer to a read with this one carries, for a server whose live wait is
    /// `interval`: strictly higher than this one.
    public func next(every interval: Duration, now: Date = Date()) -> LiveCursor {
        let seconds = max(1, interval.components.seconds)
        let intervals = Int64(now.timeIntervalSince1970) / seconds
        return LiveCursor(intervals > value ? intervals : value + 1)
    }

    /// The cursor in a `SeedSync-Live-Cursor` header: decimal digits, nothing else.
    public init?(header: String) {
        guard let value = Int64(header), value >= 0, String(value) == header else { return nil }
        self.init(value)
    }

    public static func < (lhs: LiveCursor, rhs: LiveCursor) -> Bool { lhs.value < rhs.value }

    public var description: String { String(value) }
}
