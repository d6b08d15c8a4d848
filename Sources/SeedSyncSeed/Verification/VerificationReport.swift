/// The outcome of ``SeedVerifier/verify(_:options:)``: every check with its result.
///
/// ```json
/// {"seed": "demo.sqlite", "passed": false, "revision": 301,
///  "checks": [{"name": "integrity", "status": "passed", "detail": "ok"}, …]}
/// ```
public struct VerificationReport: Codable, Sendable, Hashable {
    public struct Check: Codable, Sendable, Hashable {
        public enum Status: String, Codable, Sendable {
            case passed, failed, skipped
        }

        /// A stable identifier: `sqlite-file`, `seed-format`, `integrity`, …
        public var name: String
        public var status: Status
        /// What was found, in one line.
        public var detail: String
    }

    public var seed: String
    /// Whether no check failed.
    public var passed: Bool { !checks.contains { $0.status == .failed } }
    /// The embedded revision, when the metadata could be read.
    public var revision: Int64?
    public var checks: [Check] = []

    /// The checks that failed.
    public var failures: [Check] { checks.filter { $0.status == .failed } }

    mutating func record(_ name: String, _ passed: Bool, _ detail: String) {
        checks.append(Check(name: name, status: passed ? .passed : .failed, detail: detail))
    }

    mutating func skip(_ name: String, _ detail: String) {
        checks.append(Check(name: name, status: .skipped, detail: detail))
    }

    private enum CodingKeys: String, CodingKey { case seed, passed, revision, checks }

    public init(seed: String) {
        self.seed = seed
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        seed = try container.decode(String.self, forKey: .seed)
        revision = try container.decodeIfPresent(Int64.self, forKey: .revision)
        checks = try container.decode([Check].self, forKey: .checks)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(seed, forKey: .seed)
        try container.encode(passed, forKey: .passed)
        try container.encodeIfPresent(revision, forKey: .revision)
        try container.encode(checks, forKey: .checks)
    }
}
