public import Crypto

/// What a `seed-server serve` process runs with. Every limit has a default that suits a server on
/// a small machine; tests shrink them to reach the edges cheaply.
public struct ServerConfiguration: Sendable {
    public var host: String
    public var port: Int
    /// Who may call what; `nil` (and no ``jwt``) serves without authentication (`--allow-anonymous`,
    /// for experiments).
    public var tokens: TokenSet?
    /// JWTs from the app's identity provider accepted beside ``tokens``; `nil` takes none.
    public var jwt: JWTConfiguration?
    /// The largest request body accepted, compressed or decompressed: 8 MiB.
    public var maxRequestBodySize: Int
    /// Snapshot rows per page when the request gives no `limit`.
    public var defaultSnapshotLimit: Int
    /// The most snapshot rows per page; larger `limit` values are reduced to it.
    public var maxSnapshotLimit: Int
    /// Change sets per sync answer when the request gives no `limit`.
    public var defaultSyncLimit: Int
    /// The most change sets per sync answer; larger `limit` values are reduced to it.
    public var maxSyncLimit: Int
    /// The most change-set JSON per sync answer (a single larger change set is still sent whole).
    public var syncByteBudget: Int
    /// Responses smaller than this are not gzip-compressed.
    public var minimumCompressionSize: Int
    /// A connection that sends nothing for this long is closed: 60 seconds.
    public var idleTimeout: Duration
    /// The longest a request body may take to arrive whole: 30 seconds. A client that sends it
    /// more slowly (a byte now and then, which the idle timeout never sees) gets 408 and the
    /// connection is closed.
    public var requestBodyTimeout: Duration
    /// The most change sets one `POST /v1/sync` may push: 100.
    public var maxPushedChangeSets: Int
    /// How long the result of a pushed change set is kept for a retry with the same id: 7 days.
    public var pushRetention: Duration
    /// The longest a caught-up sync request is held for a new revision (live sync, `"wait"`):
    /// 55 seconds, under the minute after which proxies commonly give up on a silent request.
    public var maxWait: Duration
    /// The most sync requests held at once: 10,000. One more is answered 503 `too_many_waiting`
    /// with `Retry-After`. Each holds a connection (a file descriptor: raise `ulimit -n` to match).
    public var maxWaitingRequests: Int
    /// How long a live read (`GET /v1/changes` with `live`) of a caught-up client is held for a new
    /// revision: 20 seconds (at most ``maxWait``). It is the same for every client, so that clients
    /// at one revision ask one address and a cache in front of the server collapses them into one
    /// held request; a cache must let a request wait on another's answer longer than this
    /// (nginx: `proxy_cache_lock_timeout` and `proxy_cache_lock_age`).
    public var liveReadWait: Duration
    /// Revisions per block of `GET /v1/changes`: 1,000. An answer ends at its block's end, so
    /// clients read the same addresses and a cache answers them all (see `docs/PROTOCOL.md`).
    /// A size below 1 is taken as 1.
    public var changesBlockSize: Int64
    /// Whether `GET /v1/changes` and snapshot answers say `Cache-Control: public`, which lets
    /// shared caches (a CDN, an nginx) keep them although the request carried a token: only behind
    /// a cache that checks tokens itself (`GET /v1/auth`), or for data anyone may read
    /// (`--shared-cache`). Off: `private`, which only the client's own cache keeps.
    public var sharedCache: Bool
    /// How long a snapshot page may be served after it was read: 30 seconds. The server keeps the
    /// pages it reads that long (64 MiB at most) and answers a crowd asking for them from memory;
    /// its answers say `max-age` of it, so HTTP caches may do the same. A page says its revision
    /// and clients catch up from the oldest one, so an older page costs a longer catch-up, never
    /// a lost change (`docs/PROTOCOL.md` §5). Zero reads every page afresh (`max-age=0`).
    public var snapshotMaxAge: Duration
    /// The folder of published seeds that `GET /v1/seeds/{sha256}/{file}` serves: what
    /// `seed-build` writes, each seed with its manifest (and `.gz`). `nil`: none are served.
    public var seedsFolder: String?
    /// The key that signs every `GET /v1/changes` answer (`SeedSync-Signature`, see
    /// `AnswerSignature`), so that clients that trust it refuse an answer a cache altered.
    /// `nil` (the default): answers are not signed.
    public var answerKey: Curve25519.Signing.PrivateKey?

    public init(
        host: String = "127.0.0.1",
        port: Int = 8080,
        tokens: TokenSet?,
        jwt: JWTConfiguration? = nil,
        maxRequestBodySize: Int = 8 << 20,
        defaultSnapshotLimit: Int = 5_000,
        maxSnapshotLimit: Int = 50_000,
        defaultSyncLimit: Int = 1_000,
        maxSyncLimit: Int = 10_000,
        syncByteBudget: Int = 4 << 20,
        minimumCompressionSize: Int = 1_024,
        idleTimeout: Duration = .seconds(60),
        requestBodyTimeout: Duration = .seconds(30),
        maxPushedChangeSets: Int = 100,
        pushRetention: Duration = .seconds(7 * 86_400),
        maxWait: Duration = .seconds(55),
        maxWaitingRequests: Int = 10_000,
        liveReadWait: Duration = .seconds(20),
        changesBlockSize: Int64 = 1_000,
        sharedCache: Bool = false,
        snapshotMaxAge: Duration = .seconds(30),
        seedsFolder: String? = nil
    ) {
        self.seedsFolder = seedsFolder
        self.host = host
        self.port = port
        self.tokens = tokens
        self.jwt = jwt
        self.maxRequestBodySize = maxRequestBodySize
        self.defaultSnapshotLimit = defaultSnapshotLimit
        self.maxSnapshotLimit = maxSnapshotLimit
        self.defaultSyncLimit = defaultSyncLimit
        self.maxSyncLimit = maxSyncLimit
        self.syncByteBudget = syncByteBudget
        self.minimumCompressionSize = minimumCompressionSize
        self.idleTimeout = idleTimeout
        self.requestBodyTimeout = requestBodyTimeout
        self.maxPushedChangeSets = maxPushedChangeSets
        self.pushRetention = pushRetention
        self.maxWait = maxWait
        self.maxWaitingRequests = maxWaitingRequests
        self.liveReadWait = liveReadWait
        self.changesBlockSize = changesBlockSize
        self.sharedCache = sharedCache
        self.snapshotMaxAge = snapshotMaxAge
    }
}
