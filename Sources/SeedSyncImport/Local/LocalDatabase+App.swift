import Foundation
import GRDB
import SeedSyncModel
import SeedSyncSeed

extension LocalDatabase {
    /// The database the importer works on: the app's connection when it handed one over
    /// (``adopt(_:)``), else the file at `path` (``open(at:)``); `nil` when there is no
    /// database yet, so the seed is to be installed.
    static func open(at path: String, app: (any DatabaseWriter)?) async throws -> LocalDatabase? {
        guard let app else { return try open(at: path) }
        return try await adopt(app)
    }

    /// The app's own connection as the database, or `nil` when the database it opened has no table
    /// yet (a pool opened on a path where nothing was): the seed is installed into it (``install(_:into:)``).
    ///
    /// - Throws: ``ImportError/Code/invalidDatabase`` for an in-memory database, a connection with
    ///   foreign keys off, or a database with tables that is not a SeedSync one (left as it is);
    ///   ``ImportError/Code/storage`` when the volume fails.
    static func adopt(_ writer: any DatabaseWriter) async throws -> LocalDatabase? {
        let path = try file(of: writer)
        let metadata: SeedMetadata?
        do {
            metadata = try await writer.writeWithoutTransaction { db in
                guard try Bool.fetchOne(db, sql: "PRAGMA foreign_keys") == true else {
                    throw ImportError(
                        .invalidDatabase,
                        "the app's connection to \(path) has foreign keys off: SeedSync needs them on to refuse change sets that leave a reference to a missing row; keep GRDB's Configuration.foreignKeysEnabled true (its default)"
                    )
                }
                guard try !isEmpty(db) else { return nil }
                return try SeedMetadata.read(seedIn: db, path: path)
            }
        } catch let error as SeedError where error.isStorageFailure {
            throw ImportError(.storage, "\(error); \(path) was left as it is")
        } catch let error as SeedError {
            throw ImportError(
                .invalidDatabase,
                "\(error); it was left as it is: hand SeedSync a database of its own, or an empty one to install the seed into"
            )
        } catch let error as DatabaseError {
            throw ImportError(SeedError.database(error, "read \(path)", file: path), otherwise: .invalidDatabase)
        }
        guard let metadata else { return nil }
        return LocalDatabase(path: path, metadata: metadata, writer: writer, isAppDatabase: true)
    }

    /// The path of the file `writer` writes.
    ///
    /// - Throws: ``ImportError/Code/invalidDatabase`` for an in-memory database.
    static func file(of writer: any DatabaseWriter) throws -> String {
        guard FileManager.default.fileExists(atPath: writer.path) else {
            throw ImportError(
                .invalidDatabase,
                "the app's database '\(writer.path)' is not a file: SeedSync keeps its rows in a database file; open the DatabasePool or DatabaseQueue at a file path"
            )
        }
        return writer.path
    }

    /// Installs the checked seed at `source` into the app's empty database, in one transaction,
    /// and returns it adopted.
    static func install(_ source: String, into writer: any DatabaseWriter) async throws -> LocalDatabase {
        try await copy(source, into: writer, onlyIfEmpty: true, "nothing was installed")
        guard let database = try await adopt(writer) else {
            throw ImportError(.invalidDatabase, "\(writer.path) is still empty after the seed was copied into it")
        }
        return database
    }

    /// Copies every page of the file at `source` over the database that `writer` writes, in one
    /// transaction (SQLite's backup API: readers see the old database or the new one, whole), then
    /// tells the connection's transaction observers that every table changed, since a backup goes
    /// around them: the app's `ValueObservation`s fetch again.
    ///
    /// - Parameters:
    ///   - onlyIfEmpty: refuse when the database has a table (checked under the write lock, so an
    ///     app that creates one meanwhile keeps it).
    ///   - otherwise: what the error says became of the database.
    static func copy(
        _ source: String, into writer: any DatabaseWriter, onlyIfEmpty: Bool = false, _ otherwise: String
    ) async throws {
        let path = writer.path
        var configuration = Configuration()
        configuration.readonly = true
        do {
            let seed = try DatabaseQueue(path: source, configuration: configuration)
            defer { try? seed.close() }
            try backup(seed, into: writer, at: path, onlyIfEmpty: onlyIfEmpty, otherwise)
            try await notifyEveryTable(of: writer)
        } catch let error as DatabaseError {
            let failure = SeedError.database(error, "copy \(source) over \(path)", file: path)
            throw ImportError(failure, otherwise: .invalidDatabase, otherwise)
        }
    }

    private static func backup(
        _ seed: DatabaseQueue, into writer: any DatabaseWriter, at path: String, onlyIfEmpty: Bool, _ otherwise: String
    ) throws {
        try seed.read { from in
            try writer.writeWithoutTransaction { into in
                if onlyIfEmpty, try !isEmpty(into) {
                    throw ImportError(
                        .invalidDatabase, "\(path) got tables of the app's while the seed was installed; \(otherwise)")
                }
                try checkPageSizes(from, into, source: seed.path, path: path, otherwise)
                try from.backup(to: into)
            }
        }
    }

    /// Tells the transaction observers of `writer` that every table changed, after a change that
    /// went around them (a backup, a migration's new schema): the app's `ValueObservation`s fetch again.
    static func notifyEveryTable(of writer: any DatabaseWriter) async throws {
        try await writer.write { db in try db.notifyChanges(in: DatabaseRegion.fullDatabase) }
    }

    /// A database in WAL mode cannot change its page size, so a backup into one fails unless the
    /// sizes match (an app that chose another page size for its database).
    private static func checkPageSizes(
        _ from: Database, _ into: Database, source: String, path: String, _ otherwise: String
    ) throws {
        let size = try Int.fetchOne(from, sql: "PRAGMA page_size") ?? 0
        let destination = try Int.fetchOne(into, sql: "PRAGMA page_size") ?? 0
        guard size != destination, try String.fetchOne(into, sql: "PRAGMA journal_mode") == "wal" else { return }
        throw ImportError(
            .invalidDatabase,
            "\(path) has pages of \(destination) bytes and \(source) of \(size): a database in WAL mode cannot change its page size; \(otherwise): open the app's database with SQLite's default page size (\(SeedFormat.pageSize))"
        )
    }

    /// Whether the database has no table of its own (SQLite's internal ones aside).
    private static func isEmpty(_ db: Database) throws -> Bool {
        try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'") == 0
    }
}
