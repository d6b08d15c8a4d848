/// Why an import stopped, with what to do about it. The database is left at its last good
/// revision whatever the code.
///
/// Network and server failures that are not specific to importing arrive as
/// `SyncClientError` instead.
public struct ImportError: Error, CustomStringConvertible, Sendable {
    public enum Code: Sendable, Hashable {
        /// The shipped seed is damaged, is not a seed, or is not the one the app expects.
        case invalidSeed
        /// Something at the database path is not a SeedSync database, or cannot be written.
        case invalidDatabase
        /// Another importer holds the database's lock.
        case locked
        /// The seed or database is for another dataset or schema version than the server.
        case mismatch
        /// The database is at a revision the server has not reached.
        case revisionAhead
        /// A change set did not fit: out of order, an unknown type or field, a wrong value.
        case invalidChangeSet
    }

    public let code: Code
    public let description: String

    public init(_ code: Code, _ description: String) {
        self.code = code
        self.description = description
    }
}
