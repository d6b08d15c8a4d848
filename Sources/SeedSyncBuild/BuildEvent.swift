/// What ``SeedBuilder`` reports while it works, for progress output and tests.
public enum BuildEvent: Sendable, Hashable {
    /// The download starts (or resumes) at `revision`; `rowCounts` are the server's counts per
    /// type when it reports them.
    case started(revision: Int64, rowCounts: [String: Int]?, resumed: Bool)
    /// One snapshot page was inserted: its rows and its size in bytes.
    case page(type: String, rows: Int, bytes: Int64)
    /// Change sets were applied during catch-up; `revision` is the seed's revision now.
    case caughtUp(changeSets: Int, revision: Int64)
    /// The download is complete; checks, `VACUUM` and hashing follow.
    case finishing
}
