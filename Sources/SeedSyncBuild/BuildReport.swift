public import SeedSyncModel
public import SeedSyncSeed

/// What a finished build produced, as `seed-build --json` prints it.
public struct BuildReport: Codable, Sendable, Hashable {
    /// The seed file.
    public var output: String
    public var manifestPath: String
    public var manifest: SeedManifest
    /// The revision the catch-up started from: the server's when the download began (R0), or the
    /// oldest page's when the server or a cache answered with pages read before it.
    public var startRevision: Int64
    /// Whether an interrupted build was continued.
    public var resumed: Bool
    /// Snapshot pages and change sets fetched by this run.
    public var pages: Int
    public var changeSets: Int
    /// Body bytes received by this run, decompressed.
    public var bytesDownloaded: Int64
    /// Seconds per step: `download`, `catchUp`, `finish`, `total`.
    public var seconds: [String: Double]
    /// The server's record of the seed, when it was registered (``SeedBuilder/Options/register``).
    public var registered: RegisteredSeed?
    /// The seeds cut per scope value (``SeedBuilder/Options/scopes``), in key order.
    public var scopeSeeds: [ScopeSeed]?
}

/// One scope value's seed, cut from a build (``SeedBuilder/Options/scopes``).
public struct ScopeSeed: Codable, Sendable, Hashable {
    /// The scope value whose rows (and the shared rows) the seed holds.
    public var value: JSONValue
    public var output: String
    public var manifest: SeedManifest
    /// The server's record of the seed, when it was registered (``SeedBuilder/Options/register``).
    public var registered: RegisteredSeed?
}
