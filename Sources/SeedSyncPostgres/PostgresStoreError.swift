import PostgresNIO
import SeedSyncModel

/// A problem with a PostgreSQL store as a whole: where it is, whether it is set up, whether its
/// tables fit the schema. Requests a store cannot serve throw `SyncStoreError` instead.
///
/// Messages name the server (never the password), the table and the column, and say what to do.
public struct PostgresStoreError: Error, CustomStringConvertible, Sendable {
    /// What went wrong. New codes may be added: compare with the static members.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        private init(_ rawValue: String) { self.rawValue = rawValue }

        /// The URL or the password file is unusable.
        public static let invalidLocation = Self("invalid_location")
        /// No connection: refused, timed out, or the password was wrong.
        public static let unreachable = Self("unreachable")
        /// The database holds no SeedSync store (`seed-server init` was not run on it).
        public static let notInitialized = Self("not_initialized")
        /// The database holds a SeedSync store of another format version than this library reads.
        public static let unsupportedFormat = Self("unsupported_format")
        /// The database already holds a SeedSync store, or a table `init` would create exists.
        public static let alreadyInitialized = Self("already_initialized")
        /// A table does not match the schema: missing, a column missing or extra, a type or key
        /// that does not fit.
        public static let tableMismatch = Self("table_mismatch")
        /// A bulk load left a reference to a missing row, or its input is malformed.
        public static let invalidLoad = Self("invalid_load")
        /// A constraint of a table refused a write (a deferred foreign key at commit, a `varchar`
        /// length, a check): SQLSTATE classes 22 and 23.
        public static let refused = Self("refused")
        /// PostgreSQL refused a statement for another reason (permissions, for one).
        public static let database = Self("database")

        public var description: String { rawValue }
    }

    public let code: Code
    public let description: String

    init(_ code: Code, _ description: String) {
        self.code = code
        self.description = description
    }

    static func invalidLocation(_ detail: String) -> Self {
        Self(.invalidLocation, "invalid PostgreSQL location: \(detail)")
    }

    static func tableMismatch(_ detail: String) -> Self {
        Self(.tableMismatch, detail)
    }
}

extension PSQLError {
    /// The SQLSTATE of an error the server sent, such as `23505`.
    var sqlState: String? { serverInfo?[.sqlState] }

    /// The server's message (never the statement's values: PostgreSQL puts those in `detail`).
    var serverMessage: String? { serverInfo?[.message] }

    /// Whether the connection, not the statement, failed: the server is down, restarting or
    /// unreachable, or it ended the session (`57P01` admin shutdown, `57P03` starting up).
    var isConnectionFailure: Bool {
        switch code {
        case .connectionError, .serverClosedConnection, .clientClosedConnection, .uncleanShutdown, .poolClosed:
            return true
        case .server:
            guard let state = sqlState else { return false }
            return state.hasPrefix("08") || state == "57P01" || state == "57P02" || state == "57P03"
        default:
            return false
        }
    }
}
