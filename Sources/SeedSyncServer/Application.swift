public import Hummingbird
public import Logging
import SeedSyncModel
public import SeedSyncStore

/// Builds the sync server: protocol v1 over `store`, with the middleware the protocol needs
/// (a line of log per request, errors as JSON, gzip, bearer tokens), `GET /metrics` for an
/// admin token, and the store's revision watch that live sync requests wait on (`RevisionWatch`).
/// Tests build the same application.
///
/// ```swift
/// let store = try SQLiteSyncStore(path: "server.sqlite")
/// let app = try await buildApplication(store: store, configuration: ServerConfiguration(tokens: tokens))
/// try await app.runService()
/// ```
///
/// - Parameters:
///   - store: the store served; it stays open while the application runs.
///   - configuration: the address, the tokens and the limits.
///   - logger: where a line per request and the store's failures go.
///   - onServerRunning: called with the bound port once the server listens (useful with port 0).
/// - Throws: ``KeySetError`` when JWTs are configured and their keys cannot be read or used, or
///   the dataset declares a scope and ``JWTConfiguration/scopeClaim`` is not set.
public func buildApplication(
    store: any SyncStore,
    configuration: ServerConfiguration,
    logger: Logger = Logger(label: "seed-server"),
    onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
) async throws -> some ApplicationProtocol {
    let versions = LockedValue(try await store.schemaHistory())
    if let scope = versions.get().newest.schema.scope, let jwt = configuration.jwt, jwt.scopeClaim == nil {
        throw KeySetError(
            .noScopeClaim, source: "the JWT configuration",
            "the dataset declares scope \(scope.name), but no scope claim says which \(scope.name) values a JWT grants; set one (seed-server serve --jwt-scope-claim app_metadata.teams)"
        )
    }
    let metrics = ServerMetrics()
    let router = Router()
    router.add(middleware: AccessLogMiddleware(metrics: metrics))
    router.add(middleware: ErrorMiddleware(metrics: metrics))
    router.add(middleware: ResponseCompressionMiddleware(minimumSize: configuration.minimumCompressionSize))
    let signal = RevisionSignal(capacity: configuration.maxWaitingRequests)
    let authenticator: Authenticator? =
        configuration.tokens == nil && configuration.jwt == nil
        ? nil
        : try await Authenticator(
            tokens: configuration.tokens ?? TokenSet(readTokens: [], adminTokens: []), jwt: configuration.jwt,
            logger: logger)
    SyncRoutes(
        store: store, versions: versions, configuration: configuration, authenticator: authenticator,
        metrics: metrics, signal: signal, pages: PageCache(maxAge: configuration.snapshotMaxAge),
        published: configuration.seedsFolder.map(PublishedSeeds.init(folder:))
    )
    .add(to: router)
    let idleTimeout = configuration.idleTimeout.components
    return Application(
        router: router,
        server: .seedHTTP1(idleTimeout: .seconds(idleTimeout.seconds)),
        configuration: .init(
            address: .hostname(configuration.host, port: configuration.port), serverName: "seed-server"),
        services: [RevisionWatch(store: store, signal: signal)],
        onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? configuration.port) },
        logger: logger
    )
}
