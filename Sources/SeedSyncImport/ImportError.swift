import SeedSyncSeed

/// Why an import stopped, with what to do about it. The database is left at its last good
/// revision whatever the code.
///
/// Network and server failures that are not specific to importing arrive as
/// `SyncClientError` instead. Decide by ``code``, never by the text:
///
/// ```swift
/// do {
///     try await importer.run()
/// } catch let error as ImportError where error.code == .storage {
///     showLowDiskSpaceWarning()
/// }
/// ```
public struct ImportError: Error, CustomStringConvertible, Sendable {
    /// What kind of failure. New codes may be added: a `switch` over it needs a `default`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case invalidSeed, invalidDatabase, storage, locked, mismatch, revisionAhead, invalidChangeSet, rowNotFound,
                pushForbidden, untrustedSeed
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The shipped seed is damaged, is not a seed, or is not the one the app expects.
        public static let invalidSeed = Code(.invalidSeed)
        /// Something at the database path is not a SeedSync database, or is damaged.
        public static let invalidDatabase = Code(.invalidDatabase)
        /// The volume failed the import: it is full, the file-size limit was reached, a file could
        /// not be read or written. Nothing is wrong with the seed or the database: free space or
        /// fix the volume and run again.
        public static let storage = Code(.storage)
        /// Another importer holds the database's lock.
        public static let locked = Code(.locked)
        /// The seed or database is for another dataset or schema version than the server.
        public static let mismatch = Code(.mismatch)
        /// The database is at a revision the server has not reached.
        public static let revisionAhead = Code(.revisionAhead)
        /// A change set did not fit: out of order, an unknown type or field, a wrong value, a
        /// reference to a missing row. For a local edit: nothing of the write was applied.
        public static let invalidChangeSet = Code(.invalidChangeSet)
        /// A local edit names a row the app's database does not have.
        public static let rowNotFound = Code(.rowNotFound)
        /// Local change sets are waiting, but the server does not let this token push them (a
        /// read token): the database was caught up, the change sets stay queued.
        public static let pushForbidden = Code(.pushForbidden)
        /// Keys are trusted (``SeedImporter/Configuration/trustedKeys``), and the seed is not signed
        /// by one of them: unsigned, a wrong signature, or signed by an unknown key (the message
        /// says which). It is not used; a database that is already there goes on without it.
        public static let untrustedSeed = Code(.untrustedSeed)

        public var description: String { base.rawValue }
    }

    public let code: Code
    public let description: String

    public init(_ code: Code, _ description: String) {
        self.code = code
        self.description = description
    }

    /// A ``SeedError`` met while importing: ``Code/storage`` when the volume failed, else `code`.
    init(_ error: SeedError, otherwise code: Code, _ context: String = "") {
        self.init(
            error.isStorageFailure ? .storage : error.isTrustFailure ? .untrustedSeed : code,
            context.isEmpty ? error.description : "\(context): \(error)")
    }
}
