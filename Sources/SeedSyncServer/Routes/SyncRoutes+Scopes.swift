import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import SeedSyncModel

/// The scope values a read answers for (PROTOCOL.md §10).
///
/// A reader of some scope values is answered for its grant, `private`: no shared cache may keep an
/// answer that depends on the token. An address that names its values (`scopes=1,2`, see
/// ``ScopeList``) is answered for those values alone, whoever asks, once the token is seen to grant
/// each: the answer then depends on the address alone, and is `public` under
/// ``ServerConfiguration/sharedCache``. A cache in front of the server asks `GET /v1/auth` about
/// the address before it answers from its store (``authorize(_:)``).
extension SyncRoutes {
    /// What a read answers for: `values`, named by its address (`addressed`) or the token's grant.
    struct ReadScope {
        var values: [JSONValue]
        var addressed: Bool
        var grant: ScopeGrant { .only(values) }
    }

    /// The scope values the request reads, when the dataset has a scope and its token does not
    /// grant every value: what bounds its answers, and what they list (`scopes`). `nil` otherwise.
    func readScopes() -> (scope: ScopeDeclaration, values: [JSONValue])? {
        guard let scope = versions.get().newest.schema.scope,
            let values = RequestGrant.current.scopes.sortedValues(as: scope.type)
        else { return nil }
        return (scope, values)
    }

    /// The values the request's token grants, as a grant: ``readScopes()``'s, or every value.
    var readGrant: ScopeGrant { readScopes().map { ScopeGrant.only($0.values) } ?? .all }

    /// What a read of `uri` answers for: the values its `scopes` parameter names, the token's
    /// values when it names none and the token does not grant every value, else `nil` (every row).
    ///
    /// - Throws: 400 `invalid_parameter` for a `scopes` parameter given twice, not in its one
    ///   spelling, or in a dataset without a scope; 403 `forbidden` for a value the token does not
    ///   grant (decided from the token alone, before anything is read).
    func readScope(of uri: URI) throws -> ReadScope? {
        let named = uri.queryParameters.getAll("scopes")
        guard !named.isEmpty else { return readScopes().map { ReadScope(values: $0.values, addressed: false) } }
        guard named.count == 1 else { throw ServerError.invalidParameter("scopes", "given once") }
        guard let scope = versions.get().newest.schema.scope else {
            throw ServerError.invalidParameter("scopes", "left out: this dataset has no scope")
        }
        let list: ScopeList
        do {
            list = try ScopeList(parameter: String(named[0]), as: scope.type)
        } catch let error as SchemaError {
            throw ServerError.invalidParameter("scopes", "a list of \(scope.name) values: \(error.description)")
        }
        let token = RequestGrant.current.scopes
        if let refused = list.values.first(where: { !token.includes($0) }) {
            throw ServerError.scopeNotGranted(scope: scope.name, value: refused, grant: token)
        }
        return ReadScope(values: list.values, addressed: true)
    }

    /// `GET /v1/auth`: 204 when the token may read the answer at the address a cache is about to
    /// answer from its store: `X-Original-URI` (as nginx's `auth_request` sends it), else this
    /// request's own address. A token that does not grant every scope value may read an address
    /// that names its values (`scopes=`), a snapshot page of a shared type, or `/v1/auth` itself;
    /// any other address (the log or a scoped type's pages without `scopes=`, whose kept answer may
    /// hold every scope's rows) is refused with 403.
    ///
    /// ```
    /// GET /v1/auth
    /// X-Original-URI: /v1/changes?after=1200&schemaVersion=1&scopes=42
    /// ```
    func authorize(_ request: Request) throws -> Response {
        let uri = request.headers[.originalURI].map { URI($0) } ?? request.uri
        if let scope = try readScope(of: uri), !scope.addressed, !holdsSharedRowsAlone(uri.path) {
            throw ServerError(
                .forbidden, code: .forbidden,
                message:
                    "this token reads some scope values only: name them in the address (scopes=\(ScopeList(scope.values).parameter)), whose answer a cache may keep for it"
            )
        }
        return Response(status: .noContent)
    }

    /// Whether the answer at `path` (raw, as a cache keeps it) holds no scoped row: `/v1/auth`, or
    /// the snapshot pages of a shared type. Anything else, spelled in any way, is taken to.
    private func holdsSharedRowsAlone(_ path: String) -> Bool {
        guard let decoded = path.removingPercentEncoding else { return false }
        let parts = decoded.split(separator: "/", omittingEmptySubsequences: true)
        if parts == ["v1", "auth"] { return true }
        guard parts.count == 3, parts[0] == "v1", parts[1] == "snapshot",
            let type = versions.get().newest.schema.type(named: String(parts[2]))
        else { return false }
        return !type.isScoped
    }
}

extension HTTPField.Name {
    /// The address an `auth_request` subrequest is about (nginx: `proxy_set_header X-Original-URI $request_uri`).
    static let originalURI = HTTPField.Name("X-Original-URI")!
}
