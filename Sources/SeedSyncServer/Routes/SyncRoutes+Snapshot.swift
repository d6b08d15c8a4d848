import Foundation
import Hummingbird
import SeedSyncModel

/// `GET /v1/snapshot/{type}[?after=K][&limit=N][&schemaVersion=V][&fields=a,b][&notBefore=R]`.
///
/// Pages are answers that caches may keep for ``ServerConfiguration/snapshotMaxAge``: this
/// process keeps them itself (``PageCache``), and says so in `Cache-Control` for the caches in
/// front of it, with a strong `ETag`. A page says the revision it was read at, and clients catch up
/// from the oldest revision their pages say, so a kept page is a true answer as long as the history
/// still reaches its revision. A client that cannot use a page before some revision (one that
/// must catch up from the history's start, or from its own revision) names it as `notBefore`: an
/// address of its own for caches, and a page read at that revision or later.
extension SyncRoutes {
    func snapshot(_ request: Request, _ context: Context) async throws -> Response {
        let raw = context.parameters.get("type") ?? ""
        let name = raw.removingPercentEncoding ?? raw
        let type = try await type(named: name)
        let query = request.uri.queryParameters
        let version = version(try Self.version(query.get("schemaVersion"), named: "schemaVersion"))
        let after = try query.get("after").map { text in
            guard let key = type.primaryKey.type.key(from: String(text)) else {
                throw SyncStoreError.invalidKey(String(text), type: type.name)
            }
            return key
        }
        let limit = try Self.limit(
            query.get("limit").map { Int($0) ?? 0 }, default: configuration.defaultSnapshotLimit,
            max: configuration.maxSnapshotLimit)
        let fields = query.get("fields").map { text in
            text.split(separator: ",", omittingEmptySubsequences: true).map(String.init)
        }
        let notBefore = try query.get("notBefore").map { text in
            guard let revision = Int64(text), revision >= 0 else {
                throw ServerError.invalidParameter("notBefore", "a whole number of 0 or more")
            }
            return revision
        }
        let address = PageCache.Address(
            type: type.name, after: after?.keyString, limit: limit, version: version, fields: fields)
        let (page, source) = try await pages.page(at: address, notBefore: notBefore) { [store] in
            try await store.snapshotPageJSON(
                of: type.name, after: after, limit: limit, version: version, fields: fields)
        }
        metrics.record(source)
        let seconds = configuration.snapshotMaxAge.components.seconds
        return cacheable(page.body, tag: page.tag, lifetime: "max-age=\(seconds)", answering: request)
    }
}
