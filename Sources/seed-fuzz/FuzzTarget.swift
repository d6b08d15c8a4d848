import Foundation
import SeedSyncGzip
import SeedSyncModel
import SeedSyncSeed

/// A fuzzed entry point: code that reads what crosses a trust boundary (a request body, a server's
/// answer, a seed file, a manifest, a gzip stream), handed arbitrary bytes.
///
/// The code under test may refuse an input with any error it means to throw. It must never crash,
/// hang or trip a sanitizer, and the properties a target checks must hold: a value parsed, written
/// and parsed again is the same value. A target that finds a violation stops the process
/// (`preconditionFailure`), which libFuzzer reports with the input that caused it.
///
/// ```sh
/// SEEDSYNC_FUZZ_TARGET=json .build-fuzz/debug/seed-fuzz corpus/json -max_total_time=60
/// ```
enum FuzzTarget: String, CaseIterable, Sendable {
    /// ``JSONParser`` on any bytes; what it accepts is written back and parsed to the same value.
    case json
    /// Every wire message's decoder (sync request and answer, change set, push, push result,
    /// snapshot page, schema, seed list, error), each decoded value written and decoded again.
    case wire
    /// A change set committed through the SQLite store, as `POST /v1/admin/changes` does.
    case commit
    /// A change set applied by the importer's applier, and a snapshot page read as a seed build does.
    case apply
    /// A sync request's pushed change sets, pushed to the SQLite store as `POST /sync` does.
    case push
    /// A file installed as a seed: every check the importer and `seed-verify` make.
    case seed
    /// A manifest read, compared with a seed, written and read back.
    case manifest
    /// The gzip inflater, fed in two pieces, its output bounded.
    case gzip

    /// Runs the target on one input.
    func run(_ input: [UInt8], in workspace: FuzzWorkspace) {
        switch self {
        case .json: Self.parseJSON(input)
        case .wire: Self.decodeMessages(input)
        case .commit: workspace.commit(input)
        case .apply: workspace.apply(input)
        case .push: workspace.push(input)
        case .seed: workspace.checkSeed(input)
        case .manifest: workspace.readManifest(input)
        case .gzip: Self.inflate(input)
        }
    }

    private static func parseJSON(_ input: [UInt8]) {
        guard let value = try? JSONParser.parse(input) else { return }
        let written = JSONWriter.bytes(of: value)
        guard let again = try? JSONParser.parse(written) else {
            preconditionFailure("JSONWriter wrote what JSONParser refuses: \(String(decoding: written, as: UTF8.self))")
        }
        precondition(again == value, "\(value) was written as \(String(decoding: written, as: UTF8.self))")
    }

    private static func decodeMessages(_ input: [UInt8]) {
        guard let json = try? JSONParser.parse(input) else { return }
        roundTrip(json, SyncRequest.init(json:), { $0.jsonBytes() })
        roundTrip(json, { json throws(JSONShapeError) in try ChangeSet(json: json) }, { $0.jsonBytes() })
        roundTrip(json, { json throws(JSONShapeError) in try PushedChangeSet(json: json) }, { $0.jsonBytes() })
        roundTrip(json, { json throws(JSONShapeError) in try PushResult(json: json) }, { $0.jsonBytes() })
        roundTrip(json, SnapshotPage.init(json:), { $0.jsonBytes() })
        _ = try? SyncResponse(json: json)
        let data = Data(input)
        if let schema = try? JSONDecoder().decode(DatasetSchema.self, from: data) { _ = try? schema.validate() }
        _ = try? JSONDecoder().decode(SchemaInfo.self, from: data)
        _ = try? JSONDecoder().decode(SeedList.self, from: data)
        _ = try? JSONDecoder().decode(ErrorResponse.self, from: data)
        _ = try? JSONDecoder().decode(CommitResponse.self, from: data)
    }

    /// Decodes `json` as a message; when it is one, writes it, decodes what was written and writes
    /// that again: the two writings must be the same bytes. (The first decoding may differ from what
    /// is written: a reader keeps what a writer leaves out, such as attributes of a row no list names,
    /// for validation to refuse.)
    private static func roundTrip<Message>(
        _ json: JSONValue, _ decode: (JSONValue) throws(JSONShapeError) -> Message, _ write: (Message) -> [UInt8]
    ) {
        guard let message = try? decode(json) else { return }
        let written = write(message)
        guard let again = try? decode(JSONParser.parse(written)) else {
            preconditionFailure(
                "\(Message.self) was written as what it cannot read: \(String(decoding: written, as: UTF8.self))")
        }
        let rewritten = write(again)
        precondition(
            rewritten == written,
            "\(Message.self) changed when written again: \(String(decoding: written, as: UTF8.self)) became \(String(decoding: rewritten, as: UTF8.self))"
        )
    }

    /// Inflates `input` fed in two pieces (split where its first byte says), at most 4 MiB out.
    private static func inflate(_ input: [UInt8]) {
        struct Enough: Error {}
        guard let inflater = try? GzipInflater(chunkSize: 4096) else { return }
        let split = input.first.map { min(Int($0) * 4, input.count) } ?? 0
        var total = 0
        do {
            for piece in [input[..<split], input[split...]] {
                try piece.withUnsafeBytes { bytes in
                    try inflater.feed(bytes) { output in
                        precondition(output.count <= 4096, "a chunk of \(output.count) bytes, over the chunk size")
                        total += output.count
                        if total > 4 << 20 { throw Enough() }
                    }
                }
            }
            try inflater.finish()
        } catch {}
    }
}
