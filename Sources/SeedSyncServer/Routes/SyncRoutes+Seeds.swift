import Foundation
import Hummingbird
import Logging
import SeedSyncModel
import SeedSyncStore

extension SyncRoutes {
    /// `GET /v1/seeds`: the registered seeds offered to the reader (one granted some scope values
    /// is offered the seeds of values it holds, and no others). A seed registered without a
    /// ``RegisteredSeed/url`` that this server publishes (``PublishedSeeds``) is given the address
    /// of its file here, a path to append to the server's base address: its `.gz` copy when there is one.
    func seedList() async throws -> Response {
        let grant = readGrant
        let seeds = try await store.registeredSeeds().filter { $0.isOffered(to: grant) }.map { seed in
            var seed = seed
            if seed.url == nil, let offered = published?.seed(seed.sha256)?.offered {
                seed.url = "v1/seeds/\(seed.sha256)/\(offered)"
            }
            return seed
        }
        return Self.json(try JSONEncoder.stable().encode(SeedList(seeds: seeds)))
    }

    /// `GET` and `HEAD /v1/seeds/{sha256}/{file}`: a file of the published seed whose plain file
    /// has that SHA-256 (``PublishedSeeds``): the seed, its `.gz` copy or its manifest, by the
    /// names its manifest gives them.
    ///
    /// Content-addressed, so immutable: `Cache-Control: max-age=31536000, immutable` (`public`
    /// with ``ServerConfiguration/sharedCache`` for a seed of every scope value), a strong `ETag`
    /// (the file's SHA-256), `Accept-Ranges: bytes`, one `Range: bytes=A-[B]` answered with 206 (and
    /// `If-Range` honoured: another tag gets the whole file). A seed of some scope values goes to
    /// readers granted them alone; to anyone else it does not exist (404), as in `GET /v1/seeds`.
    func seedFile(_ request: Request, _ context: some RequestContext) async throws -> Response {
        guard let published, let sha256 = context.parameters.get("sha256"), let name = context.parameters.get("file"),
            let seed = published.seed(sha256), let entry = seed.files[name],
            readGrant.offers(seedOf: seed.scopes)
        else { throw Self.noSeedFile }
        let path = published.path(of: name)
        guard let size = Self.fileSize(atPath: path), entry.map({ $0.size == size }) ?? true else {
            context.logger.warning(
                "published seed file missing or not the size its manifest gives", metadata: ["file": "\(path)"])
            throw Self.noSeedFile
        }
        let tag =
            try entry.map { EntityTag(sha256: $0.sha256) }
            ?? EntityTag(of: Array(Data(contentsOf: URL(fileURLWithPath: path))))
        var headers: HTTPFields = [
            .cacheControl:
                "\(configuration.sharedCache && seed.scopes == nil ? "public" : "private"), max-age=31536000, immutable",
            .eTag: tag.value, .acceptRanges: "bytes",
            .contentType: name.hasSuffix(".json")
                ? "application/json" : name.hasSuffix(".gz") ? "application/gzip" : "application/vnd.sqlite3",
        ]
        if tag.matched(by: request.headers[.ifNoneMatch]) != nil {
            return Response(status: .notModified, headers: headers)
        }
        var range = size == 0 ? nil : Self.range(request.headers[.range], size: size)
        if let ifRange = request.headers[.ifRange], ifRange != tag.value { range = nil }
        if case .unsatisfiable? = range {
            headers[.contentRange] = "bytes */\(size)"
            return Response(status: .rangeNotSatisfiable, headers: headers)
        }
        let bytes: ClosedRange<Int64> = if case .bytes(let bytes)? = range { bytes } else { 0...(size - 1) }
        headers[.contentLength] = String(size == 0 ? 0 : bytes.count)
        if range != nil { headers[.contentRange] = "bytes \(bytes.lowerBound)-\(bytes.upperBound)/\(size)" }
        let status: HTTPResponse.Status = range == nil ? .ok : .partialContent
        guard request.method != .head, size > 0 else { return Response(status: status, headers: headers) }
        let body = try await FileIO().loadFile(
            path: path, range: Int(bytes.lowerBound)...Int(bytes.upperBound), context: context)
        return Response(status: status, headers: headers, body: body)
    }

    /// What a `Range` header asks of a file of `size` bytes (RFC 9110 §14): one range, or `nil` for
    /// the whole file (no header, another unit, several ranges, a malformed one).
    enum ByteRange: Equatable {
        case bytes(ClosedRange<Int64>)
        case unsatisfiable
    }

    static func range(_ header: String?, size: Int64) -> ByteRange? {
        guard let header, header.hasPrefix("bytes="), !header.contains(",") else { return nil }
        let spec = header.dropFirst(6).trimmingCharacters(in: .whitespaces)
        guard let dash = spec.firstIndex(of: "-") else { return nil }
        let (first, last) = (spec[..<dash], spec[spec.index(after: dash)...])
        if first.isEmpty {  // the last N bytes
            guard let count = Int64(last) else { return nil }
            return count == 0 ? .unsatisfiable : .bytes(max(0, size - count)...(size - 1))
        }
        guard let start = Int64(first), start >= 0 else { return nil }
        guard start < size else { return .unsatisfiable }
        guard !last.isEmpty else { return .bytes(start...(size - 1)) }
        guard let end = Int64(last), end >= start else { return nil }
        return .bytes(start...min(end, size - 1))
    }

    /// The size of a file, or `nil` when there is none.
    private static func fileSize(atPath path: String) -> Int64? {
        (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int64
    }

    private static var noSeedFile: ServerError {
        ServerError(.notFound, code: .notFound, message: "no such published seed file")
    }
}
