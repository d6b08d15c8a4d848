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
///
/// `GET /v1/snapshot/{type}/uniform?fields=a,b[&schemaVersion=V][&notBefore=R][&scopes=1,2]`
/// answers which of the fields hold one value in every row (`UniformFields`), kept and cached
/// as a page is: it says its revision, and its client catches up from its own, `notBefore`.
extension SyncRoutes {
    func snapshot(_ request: Request, _ context: Context) async throws -> Response {
        let type = try await snapshotType(context)
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
        let fields = query.get("fields").map(Self.fieldList)
        let address = PageCache.Address(
            type: type.name, after: after?.keyString, limit: limit, version: version, fields: fields)
        return try await keptAnswer(to: request, of: type, at: address) { [store] grant in
            try await store.snapshotPageJSON(
                of: type.name, after: after, limit: limit, version: version, fields: fields, grant: grant)
        }
    }

    func uniformFields(_ request: Request, _ context: Context) async throws -> Response {
        let type = try await snapshotType(context)
        let query = request.uri.queryParameters
        let version = version(try Self.version(query.get("schemaVersion"), named: "schemaVersion"))
        guard let fields = query.get("fields").map(Self.fieldList), !fields.isEmpty else {
            throw ServerError.invalidParameter("fields", "one field name or more, separated by commas")
        }
        let address = PageCache.Address(
            type: type.name, after: nil, limit: 0, version: version, fields: fields, kind: .uniformFields)
        return try await keptAnswer(to: request, of: type, at: address) { [store] grant in
            try await store.uniformFields(of: type.name, fields: fields, version: version, grant: grant).jsonBytes()
        }
    }

    /// The type the path names.
    private func snapshotType(_ context: Context) async throws -> EntityType {
        let raw = context.parameters.get("type") ?? ""
        return try await type(named: raw.removingPercentEncoding ?? raw)
    }

    /// A `fields` query parameter: names separated by commas.
    private static func fieldList(_ text: String) -> [String] {
        text.split(separator: ",", omittingEmptySubsequences: true).map(String.init)
    }

    /// The answer `read` gives for the request's grant, kept and cached as a page (``PageCache``):
    /// for a reader of some scope values of a scoped type, read for its grant, `private` and kept
    /// by no cache, or, when the address names the values (`scopes=`, ``readScope(of:)``), read for
    /// those and kept as any page; with `notBefore`, an answer read at that revision or later.
    private func keptAnswer(
        to request: Request, of type: EntityType, at address: PageCache.Address,
        read: @escaping @Sendable (ScopeGrant) async throws -> [UInt8]
    ) async throws -> Response {
        let notBefore = try Self.wholeNumber(
            request.uri.queryParameters.get("notBefore"), named: "notBefore", atLeast: 0)
        let scope = try readScope(of: request.uri)
        if type.isScoped, let scope, !scope.addressed {
            // An answer for some scope values: read for this grant alone, kept by no cache but the client's.
            if let notBefore {
                let revision = try await store.revisions().revision
                if notBefore > revision { throw SyncStoreError.revisionAhead(requested: notBefore, revision: revision) }
            }
            let body = try await read(RequestGrant.current.scopes)
            return cacheable(body, tag: EntityTag(of: body), lifetime: "max-age=0", answering: request, shared: false)
        }
        // An answer of a shared type is the same for every reader, whatever values its address names.
        let named = type.isScoped ? scope : nil
        var address = address
        address.scopes = named.map { ScopeList($0.values).parameter }
        let (page, source) = try await pages.page(at: address, notBefore: notBefore) {
            try await read(named?.grant ?? .all)
        }
        if address.kind == .page { metrics.record(source) }
        // Without notBefore the client may not catch up from an older answer: no cache may keep it.
        let seconds = notBefore == nil ? 0 : pages.secondsLeft(of: page)
        return cacheable(page.body, tag: page.tag, lifetime: "max-age=\(seconds)", answering: request)
    }
}
