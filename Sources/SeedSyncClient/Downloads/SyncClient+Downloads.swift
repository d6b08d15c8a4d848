package import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension SyncClient {
    /// The whole body at `url` (a seed's manifest), at most `limit` bytes, retried as any request.
    ///
    /// The token goes with the request only when `url` is on the server's origin: a CDN or an object
    /// store is never handed it.
    package func fetch(_ url: URL, limit: Int) async throws -> Data {
        let label = "GET \(url.absoluteString)"
        var attempt = 1
        while true {
            do {
                let request = try await fileRequest(url, label: label)
                let (response, data) = try await load(request, limit: limit, label: label)
                guard response.statusCode == 200 else { throw Self.fileError(response, label: label) }
                return data
            } catch let error as SyncClientError
                where Self.isRetryable(error) && attempt < configuration.retry.maxAttempts
            {
                try await pause(after: attempt, error)
                attempt += 1
            }
        }
    }

    /// Downloads `download` until its file holds all its bytes, resuming after every cut.
    ///
    /// Attempts that bring no new byte are bounded by the retry policy (`maxAttempts`, with its
    /// delays); an attempt that brings some starts the count again, so a slow, often cut
    /// connection still finishes, up to 1,000 attempts in all.
    ///
    /// - Throws: ``SyncClientError`` with ``SyncClientError/Code/notFound`` (404, 410: nothing is
    ///   published there), ``SyncClientError/Code/responseTooLarge`` (a body longer than
    ///   ``FileDownload/size``: the file there is another; the partial file is removed),
    ///   ``SyncClientError/Code/unreachable`` or ``SyncClientError/Code/serverError`` after the
    ///   last attempt (the partial file is kept for the next run), or the file system's error.
    package func download(_ download: FileDownload, progress: @escaping @Sendable (DownloadProgress) -> Void)
        async throws
    {
        var failures = 1
        for _ in 1...1000 {
            let before = PartialFile.size(of: download.path)
            do {
                if try await attempt(download, progress: progress) { return }
                throw SyncClientError(
                    .unreachable,
                    "GET \(download.url.absoluteString): the answer ended at byte \(PartialFile.size(of: download.path)) of \(download.size)"
                )
            } catch let error as SyncClientError where Self.isRetryable(error) || error.isCodedDownload {
                if PartialFile.size(of: download.path) > before { failures = 0 }
                failures += 1
                guard failures <= configuration.retry.maxAttempts else { throw error }
                try await pause(after: failures - 1, error)
            }
        }
        throw SyncClientError(.unreachable, "GET \(download.url.absoluteString): 1,000 attempts did not finish it")
    }

    /// One request: resumes the partial file when it can. Whether the file is complete.
    private func attempt(_ download: FileDownload, progress: @escaping @Sendable (DownloadProgress) -> Void)
        async throws -> Bool
    {
        let label = "GET \(download.url.absoluteString)"
        let file = try PartialFile(download, progress: progress)
        if file.offset == download.size { return true }
        var request = try await fileRequest(download.url, label: label)
        // The stall watchdog bounds the attempt: a large file may take longer than any request timeout.
        request.timeoutInterval = 7 * 86_400
        if file.offset > 0, let validator = file.record.validator {
            request.setValue("bytes=\(file.offset)-", forHTTPHeaderField: "Range")
            request.setValue(validator, forHTTPHeaderField: "If-Range")
        }
        do {
            _ = try await loader.stream(
                request, limit: download.size, stallTimeout: configuration.requestTimeout, into: file)
        } catch BoundedLoader.Failure.tooLarge, BoundedLoader.Failure.sink(PartialFile.Problem.tooLong) {
            download.remove()
            throw SyncClientError(
                .responseTooLarge,
                "\(label): the file is longer than the \(download.size) bytes expected, so it is not the file asked for; the partial download was removed"
            )
        } catch BoundedLoader.Failure.sink(PartialFile.Problem.status(let response)) {
            throw Self.fileError(response, label: label)
        } catch BoundedLoader.Failure.sink(PartialFile.Problem.rangeMismatch(let range)) {
            download.remove()
            throw SyncClientError(
                .serverError,
                "\(label): asked for the bytes from \(file.offset), the server sent \(range); starting over")
        } catch BoundedLoader.Failure.sink(PartialFile.Problem.encoded(let coding)) {
            throw SyncClientError(
                .malformedResponse,
                "\(label): the host sent the file with Content-Encoding \(coding), though it was asked for as stored (identity); serve published seeds without compression on the way"
            ).codedDownload()
        } catch BoundedLoader.Failure.sink(let error) {
            throw error
        } catch BoundedLoader.Failure.transport(let error) {
            throw SyncClientError(
                .unreachable, "\(label): \(Self.describe(error, timeout: configuration.requestTimeout))")
        }
        try file.close()
        return PartialFile.size(of: download.path) == download.size
    }

    /// A GET of `url`, with the token when `url` is on the server's origin.
    private func fileRequest(_ url: URL, label: String) async throws -> URLRequest {
        var request = URLRequest(url: url, timeoutInterval: configuration.requestTimeout)
        // The bytes as stored: a `.gz` file must not be decompressed on the way.
        request.setValue("identity", forHTTPHeaderField: "Accept-Encoding")
        if Self.sameOrigin(url, configuration.serverURL), let token = try await token(for: label) {
            request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        }
        return request
    }

    private func pause(after attempt: Int, _ error: SyncClientError) async throws {
        let delay = configuration.retry.delay(afterAttempt: attempt, retryAfter: error.retryAfter)
        onRetry(attempt, error, delay)
        try await Task.sleep(nanoseconds: UInt64(delay * 1_000_000_000))
    }

    /// The error of a file request answered with `response`'s status (not 200), with its `Retry-After`.
    static func fileError(_ response: HTTPURLResponse, label: String) -> SyncClientError {
        let status = response.statusCode
        var error =
            switch status {
            case 404, 410:
                SyncClientError(.notFound, "\(label): HTTP \(status), nothing is published there", status: status)
            case 401: SyncClientError(.unauthorized, "\(label): HTTP 401", status: status)
            case 403: SyncClientError(.forbidden, "\(label): HTTP 403", status: status)
            default: SyncClientError(.serverError, "\(label): HTTP \(status)", status: status)
            }
        error.retryAfter = response.value(forHTTPHeaderField: "Retry-After").flatMap(Double.init)
        return error
    }

    static func describe(_ error: URLError, timeout: TimeInterval) -> String {
        error.code == .timedOut ? "no byte for \(Int(timeout)) s" : "cannot reach it: \(error.localizedDescription)"
    }

    /// Whether `a` and `b` have the same scheme, host and port.
    static func sameOrigin(_ a: URL, _ b: URL) -> Bool {
        a.scheme?.lowercased() == b.scheme?.lowercased() && a.host?.lowercased() == b.host?.lowercased()
            && (a.port ?? defaultPort(a)) == (b.port ?? defaultPort(b))
    }

    private static func defaultPort(_ url: URL) -> Int? {
        switch url.scheme?.lowercased() {
        case "http": 80
        case "https": 443
        default: nil
        }
    }
}

/// The partial file of one attempt: told the answer, it truncates to where the answer starts and
/// appends the body.
final class PartialFile: ResponseSink, @unchecked Sendable {
    enum Problem: Error {
        case status(HTTPURLResponse)
        case rangeMismatch(String)
        case tooLong
        /// The body came with a `Content-Encoding` although it was asked for as stored.
        case encoded(String)
    }

    let download: FileDownload
    /// Where the attempt starts: the size of a partial file of the same address and identity, else 0.
    let offset: Int64
    private(set) var record: ResumeRecord
    private var handle: FileHandle?
    private var position: Int64 = 0
    private var start: Int64 = 0
    private let progress: @Sendable (DownloadProgress) -> Void

    init(_ download: FileDownload, progress: @escaping @Sendable (DownloadProgress) -> Void) throws {
        self.download = download
        self.progress = progress
        let fresh = ResumeRecord(url: download.url.absoluteString, identity: download.identity, validator: nil)
        let recorded = (try? Data(contentsOf: URL(fileURLWithPath: download.resumePath))).flatMap {
            try? JSONDecoder().decode(ResumeRecord.self, from: $0)
        }
        let size = Self.size(of: download.path)
        if let recorded, recorded.url == fresh.url, recorded.identity == fresh.identity, size <= download.size {
            (record, offset) = (recorded, recorded.validator == nil ? 0 : size)
        } else {
            (record, offset) = (fresh, 0)
        }
    }

    static func size(of path: String) -> Int64 {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int64) ?? 0
    }

    func begin(_ response: HTTPURLResponse) throws {
        // Asked for as stored: a coded body's bytes and ranges are not the file's.
        if let coding = response.value(forHTTPHeaderField: "Content-Encoding"), coding.lowercased() != "identity",
            [200, 206].contains(response.statusCode)
        {
            throw Problem.encoded(coding)
        }
        switch response.statusCode {
        case 206:
            let range = response.value(forHTTPHeaderField: "Content-Range") ?? "no Content-Range"
            guard Self.start(ofContentRange: range, total: download.size) == offset else {
                throw Problem.rangeMismatch(range)
            }
            start = offset
        case 200: start = 0
        default: throw Problem.status(response)
        }
        record.validator = Self.validator(of: response)
        try JSONEncoder().encode(record).write(to: URL(fileURLWithPath: download.resumePath))
        if !FileManager.default.fileExists(atPath: download.path) {
            _ = FileManager.default.createFile(atPath: download.path, contents: nil)
        }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: download.path))
        try handle.truncate(atOffset: UInt64(start))
        try handle.seek(toOffset: UInt64(start))
        self.handle = handle
        position = start
        progress(DownloadProgress(received: position, total: download.size, resumedAt: start))
    }

    func write(_ data: Data) throws {
        guard position + Int64(data.count) <= download.size else { throw Problem.tooLong }
        try handle?.write(contentsOf: data)
        position += Int64(data.count)
        progress(DownloadProgress(received: position, total: download.size, resumedAt: start))
    }

    /// Syncs and closes the file.
    func close() throws {
        try handle?.synchronize()
        try handle?.close()
        handle = nil
    }

    deinit { try? handle?.close() }

    /// The first byte of `bytes A-B/TOTAL`, when TOTAL is `total`.
    static func start(ofContentRange text: String, total: Int64) -> Int64? {
        guard text.hasPrefix("bytes "), let slash = text.firstIndex(of: "/"),
            Int64(text[text.index(after: slash)...]) == total,
            let dash = text.firstIndex(of: "-")
        else { return nil }
        return Int64(text[text.index(text.startIndex, offsetBy: 6)..<dash])
    }

    /// What `If-Range` may name: a strong `ETag`, else `Last-Modified`; `nil` when there is neither
    /// (the next attempt then starts over).
    static func validator(of response: HTTPURLResponse) -> String? {
        if let tag = response.value(forHTTPHeaderField: "ETag"), !tag.hasPrefix("W/") { return tag }
        return response.value(forHTTPHeaderField: "Last-Modified")
    }
}
