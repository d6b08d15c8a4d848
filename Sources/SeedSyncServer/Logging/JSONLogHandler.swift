import Foundation
public import Logging

/// A swift-log handler that writes one JSON object per line, for log collectors
/// (`seed-server serve --log-format json`).
///
/// ```swift
/// let logger = Logger(label: "seed-server") { JSONLogHandler(label: $0) }
/// logger.info("GET /health 200", metadata: ["status": "200", "ms": "0.4"])
/// // {"label":"seed-server","level":"info","message":"GET \/health 200","metadata":{"ms":"0.4","status":"200"},"time":"2026-11-23T08:00:00.125Z"}
/// ```
///
/// Members: `time` (UTC, RFC 3339 with milliseconds), `level`, `label`, `message`, and `metadata`
/// when there is any (strings; lists and dictionaries as JSON arrays and objects). The line goes
/// to standard error in one write, so lines from concurrent requests never interleave.
public struct JSONLogHandler: LogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    private let label: String
    private let write: @Sendable (String) -> Void

    /// - Parameters:
    ///   - label: the logger's label, written as `label`.
    ///   - write: receives each line, newline included (standard error by default).
    public init(label: String, write: @escaping @Sendable (String) -> Void = JSONLogHandler.standardError) {
        self.label = label
        self.write = write
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { $1 } }
        if let explicit = event.metadata { merged.merge(explicit) { $1 } }
        var object: [String: Any] = [
            "time": Self.timestamp(Date()), "level": event.level.rawValue, "label": label,
            "message": event.message.description,
        ]
        if !merged.isEmpty { object["metadata"] = merged.mapValues(Self.json) }
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else { return }
        write(String(decoding: data, as: UTF8.self) + "\n")
    }

    /// Writes `line` to standard error in one call.
    public static let standardError: @Sendable (String) -> Void = { line in
        FileHandle.standardError.write(Data(line.utf8))
    }

    private static func json(_ value: Logger.Metadata.Value) -> Any {
        switch value {
        case .string(let text): text
        case .stringConvertible(let item): item.description
        case .array(let items): items.map(json)
        case .dictionary(let members): members.mapValues(json)
        }
    }

    private static func timestamp(_ date: Date) -> String {
        Date.ISO8601FormatStyle(includingFractionalSeconds: true).format(date)
    }
}
