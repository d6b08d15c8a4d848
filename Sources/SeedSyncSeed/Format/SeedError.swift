/// Why a seed could not be written, read or applied to; the description says what to do.
///
/// It never holds row values, only type names, keys and revisions.
public struct SeedError: Error, CustomStringConvertible, Sendable, Hashable {
    public let description: String

    public init(_ description: String) {
        self.description = description
    }

    static func notASeed(_ path: String, _ reason: String) -> Self {
        Self("\(path) is not a SeedSync seed: \(reason)")
    }

    static func invalidData(_ message: String) -> Self {
        Self(message)
    }

    static func busy(_ path: String) -> Self {
        Self("\(path) is in use by another process (another seed-build?); wait for it or remove the file")
    }
}
