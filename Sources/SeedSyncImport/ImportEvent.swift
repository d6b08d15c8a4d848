public import Foundation
public import SeedSyncModel
public import SeedSyncSeed

/// What a ``SeedImporter`` reports while it works, in order.
///
/// New events may be added in later releases (write-back added three): match the ones you need
/// with `if case` or a `switch` that has a `default`.
///
/// ```swift
/// for try await event in importer.events() {
///     if case .applied(let changeSet) = event, let keys = changeSet.types["events"] {
///         refresh(keys.created + keys.updated, removing: keys.deleted)
///     }
/// }
/// ```
public enum ImportEvent: Sendable, Hashable {
    /// The seed was copied into place: there was no database before.
    case installed(revision: Int64)
    /// The database was replaced as a whole (see ``Replacement``).
    case replaced(Replacement)
    /// The shipped seed could have replaced the database (it is newer, or the server's history
    /// expired) but cannot be used: it is missing, unreadable or damaged, is for a schema the
    /// server does not serve, or there is no space to copy it. (A seed whose revision cannot even
    /// be read is reported on every run.) The database is kept and goes on syncing; `reason` says
    /// what is wrong.
    /// Also sent when the seed the server offers a fresh app with no seed cannot be used (not
    /// found at its address, not the seed registered, not trusted): a snapshot is installed instead.
    case seedRejected(reason: String)
    /// The shipped seed is older than the server's history (its revision is before the server's
    /// `minRevision`): it could not catch up, so it is not installed; a snapshot is downloaded and
    /// installed instead (``downloadingSnapshot(minRevision:)`` follows). Registered seeds
    /// (`seed-build --register`) never get here: the server keeps the history they need.
    case seedSkipped(revision: Int64, minRevision: Int64)
    /// The app gives no ``SeedImporter/Configuration/seedURL``, and takes the newest published seed
    /// the server offers, at `revision` (``choseWayIn(_:)`` says why): it is downloaded
    /// (``downloadingSeed(_:)`` follows).
    case foundPublishedSeed(url: URL, revision: Int64)
    /// A fresh app weighed the ways in it has by the bytes each would download, and takes
    /// ``WayIn/taken``: sent before the download starts.
    case choseWayIn(WayIn)
    /// The published seed (``SeedImporter/Configuration/seedURL``) is being downloaded: sent as
    /// it starts or resumes, then about every mebibyte, and when it is complete.
    case downloadingSeed(SeedDownload)
    /// A full snapshot download starts, to install it or replace the database when it is complete:
    /// the server's history no longer reaches the database or the seed, or a fresh app found the
    /// snapshot the cheapest way in (``choseWayIn(_:)``).
    case downloadingSnapshot(minRevision: Int64)
    /// The database starts moving from schema version `from` to `to` in place: the new types and
    /// columns download beside it, then it takes them in one transaction.
    case migrating(from: Int, to: Int)
    /// The database is in a newer schema version, its rows, local edits and revision kept.
    case migrated(Migration)
    /// The token grants scope values the database did not hold: their rows were downloaded
    /// alone and taken in, with the change sets since the database's revision, in one
    /// transaction (PROTOCOL.md §10).
    case scopesGained(ScopeGain)
    /// One change set was applied and committed.
    case applied(AppliedChangeSet)
    /// A batch of change sets was committed: the database is at `revision`, the server was at
    /// `serverRevision` (at least) when the sync started.
    case progress(revision: Int64, serverRevision: Int64)
    /// A request failed and will be tried again after `delay` seconds.
    case retrying(attempt: Int, delay: Double, reason: String)
    /// A local change set (see ``SeedImporter/write(_:)``) was applied by the server as
    /// `revision`; `keys` maps each temporary key to the real one, by type
    /// (`["events": ["-2": 311]]`). The app's rows, their references and later local change sets
    /// use the real keys from now on.
    case pushed(id: String, revision: Int64, keys: [String: [String: JSONValue]])
    /// A local change set was not applied: a row it updated or deleted changed or went on the
    /// server since it was read, or a key it created exists. `changeSet` holds the server's rows;
    /// the app's rows are back to them (and to what later local change sets wrote), the rows it
    /// created are removed, and it left the outbox.
    case conflict(id: String, changeSet: ChangeSet)
    /// A server change met a pending local edit of the same row, and the configured
    /// ``ConflictResolution`` resolved it: the local change set now pushes `pushing` (the row's
    /// fields), rebased on the server's revision, and the app's row shows it.
    case merged(Conflict, pushing: [String: JSONValue])
    /// A server change overwrote a pending local edit of the same row: the app's row is the
    /// server's, and the local change set will conflict when pushed. `conflict.local` is the version
    /// that lost, for an app that offers to keep it (by writing it again).
    case overwritten(Conflict)
    /// A local change set was not applied and left the outbox: the server refused it (`code`
    /// `invalid_change_set`), or it was dropped here because it references a row that no longer
    /// exists (`broken_reference`: it depended on a change set that was not applied, or the
    /// server deleted the row), the server refuses its size (`too_large`), or the database was
    /// replaced by one of another schema (`schema_changed`), or it touches a row of a scope value the
    /// token no longer grants (`scope_revoked`, PROTOCOL.md §10). Its rows are back to the server's state.
    case rejected(id: String, code: String, message: String)
    /// The server has nothing more: the database is at `revision`.
    case caughtUp(revision: Int64)
    /// The run is over; always the last event of a successful run.
    case finished(ImportReport)
}

/// A database replaced as a whole, and why.
public struct Replacement: Sendable, Hashable, Codable {
    public enum Reason: String, Sendable, Hashable, Codable {
        /// The app ships a seed newer than the database (an app update).
        case newerSeed = "newer-seed"
        /// The server's history no longer reaches the database's revision (410 `history_expired`).
        case historyExpired = "history-expired"
        /// The server's history is not the one the database applied (409 `history_rewritten`: a
        /// restore from an older backup, a lossy crash): a full snapshot replaces it.
        case historyRewritten = "history-rewritten"
        /// The token grants scope values whose rows the database does not hold (PROTOCOL.md §10).
        case scopesGranted = "scopes-granted"
    }

    public enum Source: String, Sendable, Hashable, Codable {
        /// The shipped seed.
        case seed
        /// A full snapshot downloaded from the server.
        case snapshot
    }

    public var reason: Reason
    public var source: Source
    public var fromRevision: Int64
    public var toRevision: Int64

    public init(reason: Reason, source: Source, fromRevision: Int64, toRevision: Int64) {
        self.reason = reason
        self.source = source
        self.fromRevision = fromRevision
        self.toRevision = toRevision
    }
}

/// Scope values a token gained, and what bringing their rows in took
/// (``ImportEvent/scopesGained(_:)``).
public struct ScopeGain: Sendable, Hashable, Codable {
    /// The values gained, sorted.
    public var values: [JSONValue]
    /// The database's revision before; the change sets taken in with the rows brought it to
    /// ``toRevision``.
    public var fromRevision: Int64
    public var toRevision: Int64
    /// Rows downloaded: the gained values' rows of the scoped types.
    public var rowsDownloaded: Int
    /// Bytes received for those rows and the change sets.
    public var bytesDownloaded: Int64

    public init(
        values: [JSONValue], fromRevision: Int64, toRevision: Int64, rowsDownloaded: Int, bytesDownloaded: Int64
    ) {
        self.values = values
        self.fromRevision = fromRevision
        self.toRevision = toRevision
        self.rowsDownloaded = rowsDownloaded
        self.bytesDownloaded = bytesDownloaded
    }
}
