import Foundation
import Hummingbird
import SeedSyncModel
import SeedSyncStore

/// `GET /v1/snapshot/{type}[?after=K][&limit=N][&schemaVersion=V][&fields=a,b][&notBefore=R][&scopes=1,2]`.
///
/// Pages are answers that caches may keep for ``ServerConfiguration/snapshotMaxAge``: this
/// process keeps them itself (``PageCache``), and says so in `Cache-Control` for the caches in
/// front of it (the lifetime left, the page's age taken off, rounded up to a second), with a
/// strong `ETag`. A page says the
/// revision it was read at, and a client that names `notBefore` catches up from the oldest revision
/// its pages say, so a kept page read at `notBefore` or later is a true answer for it. `notBefore`
/// is the revision its catch-up cannot start before (the history's start, or its own revision).
/// A request without it gets a page read after it arrived, marked `max-age=0`: it may come from a
/// client that catches up from a revision read before its first page, as any could before pages
/// were kept.
///
/// A page of a scoped type for a reader of some scope values holds the rows of its values: read
/// for its grant, `private` and kept by no cache, or, when the address names the values
/// (`scopes=`, ``readScope(of:)``), read for those and kept as any page.
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
            query.get("limit"), default: configuration.defaultSnapshotLimit, max: configuration.maxSnapshotLimit)
        let fields = query.get("fields").map { text in
            text.split(separator: ",", omittingEmptySubsequences: true).map(String.init)
        }
        let notBefore = try Self.wholeNumber(query.get("notBefore"), named: "notBefore", atLeast: 0)
        let scope = try readScope(of: request.uri)
        if type.isScoped, let scope, !scope.addressed {
            // A page of some scope values: read for this grant alone, kept by no cache but the client's.
            if let notBefore {
                let revision = try await store.revisions().revision
                if notBefore > revision { throw SyncStoreError.revisionAhead(requested: notBefore, revision: revision) }
            }
            let body = try await store.snapshotPageJSON(
                of: type.name, after: after, limit: limit, version: version, fields: fields,
                grant: RequestGrant.current.scopes)
            return cacheable(body, tag: EntityTag(of: body), lifetime: "max-age=0", answering: request, shared: false)
        }
        // A page of a shared type is the same for every reader, whatever values its address names.
        let named = type.isScoped ? scope : nil
        let address = PageCache.Address(
            type: type.name, after: after?.keyString, limit: limit, version: version, fields: fields,
            scopes: named.map { ScopeList($0.values).parameter })
        let (page, source) = try await pages.page(at: address, notBefore: notBefore) { [store] in
            try await store.snapshotPageJSON(
                of: type.name, after: after, limit: limit, version: version, fields: fields,
                grant: named?.grant ?? .all)
        }
        metrics.record(source)
        // Without notBefore the client may not catch up from an older page: no cache may keep it.
        let seconds = notBefore == nil ? 0 : pages.secondsLeft(of: page)
        return cacheable(page.body, tag: page.tag, lifetime: "max-age=\(seconds)", answering: request)
    }
}
