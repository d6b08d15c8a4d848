import Foundation
package import PostgresNIO

/// Where a PostgreSQL store lives: `postgres://USER@HOST:PORT/DATABASE` (or `postgresql://`), and
/// the password, which never comes from the URL.
///
/// The password comes from `PGPASSWORD` or a file (`--database-password-file`), so it never shows in
/// a process list, a shell history or a log line; ``description`` leaves it out.
///
/// ```swift
/// let location = try PostgresLocation(url: "postgres://app@127.0.0.1:5432/catalog",
///                                     password: ProcessInfo.processInfo.environment["PGPASSWORD"])
/// ```
public struct PostgresLocation: Sendable, CustomStringConvertible {
    public var host: String
    public var port: Int
    public var username: String
    public var database: String
    var password: String?

    /// Whether `text` is a PostgreSQL URL rather than a file path.
    public static func isURL(_ text: String) -> Bool {
        text.hasPrefix("postgres://") || text.hasPrefix("postgresql://")
    }

    /// Parses `url`. A password inside the URL is refused: it would end up in process lists.
    ///
    /// - Throws: ``PostgresStoreError`` with code `invalidLocation` saying what is missing.
    public init(url: String, password: String?) throws(PostgresStoreError) {
        guard Self.isURL(url), let components = URLComponents(string: url), let host = components.host, !host.isEmpty
        else {
            throw .invalidLocation("expected postgres://USER@HOST:PORT/DATABASE")
        }
        guard components.password == nil else {
            throw .invalidLocation("the URL must not hold a password; give it apart from the URL")
        }
        guard let user = components.user, !user.isEmpty else {
            throw .invalidLocation("the URL names no user (postgres://USER@HOST/DATABASE)")
        }
        let database = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        guard !database.isEmpty, !database.contains("/") else {
            throw .invalidLocation("the URL names no database (postgres://USER@HOST/DATABASE)")
        }
        guard components.query == nil else { throw .invalidLocation("query parameters are not supported") }
        self.host = host
        self.port = components.port ?? 5432
        self.username = user
        self.database = database
        self.password = password
    }

    /// The password from `environment["PGPASSWORD"]`, or the first line of `file` when given.
    ///
    /// - Throws: ``PostgresStoreError`` with code `invalidLocation` when the file cannot be read.
    public static func password(environment: [String: String], file: String?) throws(PostgresStoreError) -> String? {
        guard let file else { return environment["PGPASSWORD"] }
        guard let data = FileManager.default.contents(atPath: file) else {
            throw .invalidLocation("cannot read the password file \(file)")
        }
        return String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
    }

    /// `postgres://USER@HOST:PORT/DATABASE`, never with the password.
    public var description: String { "postgres://\(username)@\(host):\(port)/\(database)" }

    /// The settings of every session: the capture's, the application name, and a transaction left
    /// open (a task that never got to its COMMIT or ROLLBACK) ended within a minute instead of
    /// holding its locks against every other writer.
    static let sessionParameters =
        CaptureSQL.sessionSettings + [
            ("application_name", "seed-server"), ("idle_in_transaction_session_timeout", "60s"),
        ]

    /// The longest a statement of the pool waits for a lock another session holds (`lock_timeout`):
    /// a table locked by a team's `ALTER TABLE` or `LOCK TABLE`, the store's lock held by a long
    /// transaction. Past it the request fails as unavailable (503, `Retry-After`) instead of
    /// holding its connection for as long as the lock is held.
    package static let lockTimeout = Duration.seconds(3)

    /// The longest a transaction of the store waits for a lock (`SET LOCAL lock_timeout`), first of
    /// all the store's own (the `_state` row every captured write takes, so writers queue for it):
    /// longer than ``lockTimeout``, since a crowd of writers waits its turn there; bounded, so a
    /// long transaction of another program fails the write as unavailable instead of holding it.
    package static let storeLockTimeout = Duration.seconds(15)

    /// One connection's configuration, with the same settings as the pool's but the lock timeout
    /// (setup waits for other servers' setup).
    package func connectionConfiguration() -> PostgresConnection.Configuration {
        var configuration = PostgresConnection.Configuration(
            host: host, port: port, username: username, password: password, database: database, tls: .disable
        )
        configuration.options.connectTimeout = .seconds(5)
        configuration.options.additionalStartupParameters = Self.sessionParameters
        return configuration
    }

    /// The pool's configuration: loopback and private networks without TLS (the URL has no TLS
    /// options yet), session settings that make every value's text form independent of who connects.
    func clientConfiguration(maximumConnections: Int) -> PostgresClient.Configuration {
        var configuration = PostgresClient.Configuration(
            host: host, port: port, username: username, password: password, database: database, tls: .disable
        )
        configuration.options.maximumConnections = maximumConnections
        configuration.options.connectTimeout = .seconds(5)
        configuration.options.additionalStartupParameters =
            Self.sessionParameters + [("lock_timeout", "\(Self.lockTimeout.components.seconds)s")]
        return configuration
    }
}
