import Hummingbird

extension SyncRoutes {
    /// An answer that caches may keep: `Cache-Control` of `lifetime` (`public` with
    /// ``ServerConfiguration/sharedCache``, else `private`) and the strong `ETag` `tag` of `body`,
    /// or 304 with no body when the request's `If-None-Match` names the tag. An answer read for
    /// some scope values (`shared` false) is always `private`: a shared cache keys answers by
    /// address, not by token, and must never hand one scope's rows to another's reader.
    ///
    /// ```swift
    /// cacheable(body, tag: EntityTag(of: body), lifetime: "max-age=1", answering: request)
    /// ```
    func cacheable(_ body: [UInt8], tag: EntityTag, lifetime: String, answering request: Request, shared: Bool = true)
        -> Response
    {
        let scope = configuration.sharedCache && shared ? "public" : "private"
        var headers: HTTPFields = [.cacheControl: "\(scope), \(lifetime)"]
        if let matched = tag.matched(by: request.headers[.ifNoneMatch]) {
            headers[.eTag] = matched
            return Response(status: .notModified, headers: headers)
        }
        headers[.eTag] = tag.value
        headers[.contentType] = "application/json"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }
}
