import Foundation
import Hummingbird
import SeedSyncModel
import SeedSyncStore

/// `GET /v1/sizes?schemaVersion=V&after=R1,R2`: what each way in would download (``DownloadSizes``),
/// for a fresh app choosing between a seed and its catch-up, and snapshot pages.
///
/// **Design.** Sizes are estimated from a sample the size of one small answer, so that asking costs
/// the server no more than a page: the snapshot from the first ``sampleRows`` rows of each type
/// (their bytes per row times the type's row count), the catch-ups from the change sets of the
/// newest ``sampleRevisions`` revisions (exact for an `after` among them; for an older one, the
/// sample's bytes per revision times the revisions). Both are read as the reader reads them: its
/// version, its scope values. Compressed sizes are those of the samples at the answers' own gzip
/// level, so that a client compares what each way would take on the wire.
extension SyncRoutes {
    /// Rows of each type the snapshot's size is estimated from.
    static var sampleRows: Int { 1_000 }
    /// Revisions the catch-ups' sizes are estimated from.
    static var sampleRevisions: Int64 { 1_000 }
    /// Revisions an answer gives catch-ups from.
    static var maxSizedRevisions: Int { 8 }

    func sizes(_ request: Request) async throws -> Response {
        let query = request.uri.queryParameters
        let version = version(try Self.version(query.get("schemaVersion"), named: "schemaVersion"))
        let starts = try Self.revisionList(query.get("after"))
        let grant = readGrant
        let info = try await store.schemaInfo(version: version, grant: grant)
        let snapshot = try await snapshotSize(of: info, grant: grant)
        let log = try await logSample(of: info, grant: grant)
        let changes = starts.filter { $0 >= info.minRevision && $0 <= info.revision }.map { log.size(after: $0) }
        let sizes = DownloadSizes(
            revision: info.revision, schemaVersion: version, snapshot: snapshot, changes: changes)
        return Self.json(try JSONEncoder.stable().encode(sizes))
    }

    /// The `after` parameter: up to ``maxSizedRevisions`` revisions, comma-separated, sorted.
    static func revisionList(_ text: String?) throws -> [Int64] {
        guard let text else { return [] }
        let parts = text.split(separator: ",", omittingEmptySubsequences: false)
        guard parts.count <= maxSizedRevisions else {
            throw ServerError.invalidParameter("after", "at most \(maxSizedRevisions) revisions, comma-separated")
        }
        return Array(Set(try parts.map { try wholeNumber(String($0), named: "after", atLeast: 0)! })).sorted()
    }

    /// Every type's first rows read as pages are, scaled to its row count.
    private func snapshotSize(of info: SchemaInfo, grant: ScopeGrant) async throws -> DownloadSizes.SnapshotSize? {
        guard let counts = info.rowCounts else { return nil }
        var total = (rows: Int64(0), bytes: 0.0, gzipped: 0.0)
        for type in info.types {
            let rows = counts[type.name] ?? 0
            guard rows > 0 else { continue }
            let page = try await store.snapshotPageJSON(
                of: type.name, after: nil, limit: Self.sampleRows, version: info.schemaVersion, fields: nil,
                grant: grant)
            let scale = Double(rows) / Double(min(rows, Self.sampleRows))
            total.rows += Int64(rows)
            total.bytes += Double(page.count) * scale
            total.gzipped += Double(try ResponseCompressionMiddleware<Context>.gzippedSize(of: page)) * scale
        }
        return .init(rows: total.rows, bytes: Int64(total.bytes), gzipped: Int64(total.gzipped))
    }

    /// The change sets of the newest ``sampleRevisions`` revisions, as the reader is sent them.
    private func logSample(of info: SchemaInfo, grant: ScopeGrant) async throws -> LogSample {
        let start = max(info.minRevision, info.revision - Self.sampleRevisions)
        guard start < info.revision else {
            return LogSample(start: start, end: start, newest: info.revision, changeSets: [], ratio: 1)
        }
        let feed = try await store.changeFeed(
            after: start, limit: Int(Self.sampleRevisions), byteBudget: configuration.syncByteBudget,
            version: info.schemaVersion, grant: grant, through: info.revision)
        let joined = feed.changeSets.map(\.json).joined(separator: Array(",".utf8))
        let plain = Array(joined)
        let gzipped = try ResponseCompressionMiddleware<Context>.gzippedSize(of: plain)
        return LogSample(
            start: start, end: feed.maxRevision, newest: info.revision, changeSets: feed.changeSets,
            ratio: plain.isEmpty ? 1 : Double(gzipped) / Double(plain.count))
    }
}

/// The newest change sets a reader is sent, from which ``DownloadSizes/ChangesSize`` are estimated.
struct LogSample {
    /// The sample is of the revisions after `start` through `end` (`newest`, unless a size budget
    /// cut the read short).
    let start: Int64
    let end: Int64
    let newest: Int64
    let changeSets: [EncodedChangeSet]
    /// Compressed bytes per byte.
    let ratio: Double

    /// The catch-up from `after`: the sample's change sets after it, and for the revisions
    /// before the sample (or after its end, when a size budget cut it) its bytes per revision.
    func size(after: Int64) -> DownloadSizes.ChangesSize {
        let sampled = Self.bytes(of: changeSets.filter { $0.revision > after })
        let perRevision = end > start ? Double(Self.bytes(of: changeSets)) / Double(end - start) : 0
        let outside = max(0, start - after) + (newest - max(end, after))
        let bytes = Int64(Double(sampled) + perRevision * Double(outside))
        return .init(after: after, revisions: newest - after, bytes: bytes, gzipped: Int64(Double(bytes) * ratio))
    }

    /// The bytes of `changeSets` in an answer: their JSON and a comma each.
    private static func bytes(of changeSets: [EncodedChangeSet]) -> Int {
        changeSets.reduce(0) { $0 + $1.json.count + 1 }
    }
}
