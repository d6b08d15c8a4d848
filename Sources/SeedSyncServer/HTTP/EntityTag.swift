import Crypto
import Foundation
import SeedSyncModel

/// A strong entity tag of a response body (RFC 9110 §8.8.3): the first 16 bytes of its SHA-256,
/// in hex. The same body has the same tag on every server and after every restart; a body
/// compressed by ``ResponseCompressionMiddleware`` is another representation, tagged with
/// `-gzip` appended, as the middleware does.
///
/// ```swift
/// let tag = EntityTag(of: body)
/// if let matched = tag.matched(by: request.headers[.ifNoneMatch]) { ... 304 ... }
/// ```
struct EntityTag: Sendable {
    /// The tag of the identity representation, quoted: `"3f2a…"`.
    let value: String

    init(of body: [UInt8]) {
        value = "\"\(SHA256.hash(data: body).prefix(16).lowercaseHex)\""
    }

    /// The tag of a file known by its SHA-256 (a published seed's): the whole digest, quoted.
    init(sha256: String) {
        value = "\"\(sha256)\""
    }

    /// The tag of `tag`'s gzip representation: `"3f2a…-gzip"`.
    static func gzipped(_ tag: String) -> String {
        guard tag.hasSuffix("\""), !tag.hasPrefix("W/") else { return tag }
        return "\(tag.dropLast())-gzip\""
    }

    /// The tag (identity or gzip) that an `If-None-Match` value names, or `nil`. `*` names the
    /// identity one; `W/` prefixes are ignored, as the weak comparison of `If-None-Match` wants.
    func matched(by header: String?) -> String? {
        guard let header else { return nil }
        let gzip = Self.gzipped(value)
        for item in header.split(separator: ",") {
            var candidate = item.trimmingCharacters(in: .whitespaces)
            if candidate == "*" { return value }
            if candidate.hasPrefix("W/") { candidate.removeFirst(2) }
            if candidate == value { return value }
            if candidate == gzip { return gzip }
        }
        return nil
    }
}
