import Foundation
import GRDB
public import SeedSyncModel
import SeedSyncSQL

/// A finished seed, opened read-only.
///
/// ```swift
/// let seed = try SeedFile(path: "Snapshots/demo.sqlite")
/// let metadata = try seed.metadata()
/// let counts = try seed.rowCounts()
/// ```
public final class SeedFile: Sendable {
    public let path: String
    let queue: DatabaseQueue

    /// Opens the file read-only; nothing is written beside it.
    ///
    /// - Parameter path: the seed file.
    /// - Parameter memoryMapped: read through a memory map of the whole file. Full scans such as
    ///   `integrity_check` take about two thirds of the time then, but every page read counts in the
    ///   process's resident memory (250 MB to verify a 118 MB seed, against 31 MB without), so
    ///   only `seed-verify`'s checks ask for it.
    /// - Throws: ``SeedError``: ``SeedError/Code/notFound`` when nothing is at `path`,
    ///   ``SeedError/Code/notASeed`` when it is not a SQLite database, and the code of the failure
    ///   (``SeedError/Code/fileSystem``, ``SeedError/Code/damaged``, …) when SQLite cannot read it.
    public init(path: String, memoryMapped: Bool = false) throws {
        guard FileManager.default.fileExists(atPath: path) else { throw SeedError(.notFound, "no seed at \(path)") }
        var configuration = Configuration()
        configuration.readonly = true
        configuration.foreignKeysEnabled = false
        // A database in use (an importer's last connection checkpoints and removes the WAL as it
        // closes, under an exclusive lock for a moment) is waited for, not reported as locked.
        configuration.busyMode = .timeout(5)
        if memoryMapped {
            configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA mmap_size = \(1 << 30)") }
        }
        do {
            queue = try DatabaseQueue(path: path, configuration: configuration)
            _ = try queue.read { db in try Int.fetchOne(db, sql: "PRAGMA schema_version") }
        } catch let error as DatabaseError where error.resultCode == .SQLITE_NOTADB {
            throw SeedError.notASeed(path, "it is not a SQLite database")
        } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_READONLY_ROLLBACK {
            // A hot journal: an interrupted write that only a read-write connection rolls back.
            guard SeedFormat.hasSeedHeader(at: path) else {
                throw SeedError.notASeed(
                    path, "it is another program's database, with an interrupted write in \(path)-journal")
            }
            throw SeedError(
                .unusable,
                "\(path) has an interrupted write in \(path)-journal, which only a read-write open rolls back")
        } catch let error as DatabaseError {
            // A full disk or an I/O error says nothing about what the file is.
            throw SeedError.database(error, "read \(path)")
        }
        self.path = path
    }

    /// Reads with the connection, which never escapes `body`.
    ///
    /// - Throws: what `body` throws; SQLite's errors as ``SeedError`` (see ``SeedError/database(_:_:)``).
    func read<T>(_ body: (Database) throws -> T) throws -> T {
        do {
            return try queue.read(body)
        } catch let error as DatabaseError {
            throw SeedError.database(error, "read \(path)")
        }
    }

    /// Opens the seed at `path` read-only, runs `body` with it, and closes it.
    public static func read<T>(_ path: String, _ body: (SeedFile) throws -> T) throws -> T {
        let file = try SeedFile(path: path)
        defer { try? file.close() }
        return try body(file)
    }

    /// The metadata table.
    ///
    /// - Throws: ``SeedError`` when the file is not a seed of a supported format.
    public func metadata() throws -> SeedMetadata {
        let path = self.path
        return try read { db in try SeedMetadata.read(seedIn: db, path: path) }
    }

    /// The number of rows of each type's table.
    public func rowCounts() throws -> [String: Int] {
        try rowCounts(of: try metadata().schema)
    }

    /// The number of rows of each of `schema`'s tables, when the metadata is already read.
    func rowCounts(of schema: DatasetSchema) throws -> [String: Int] {
        try read { db in
            var counts: [String: Int] = [:]
            for type in schema.types {
                counts[type.name] = try Int.fetchOne(db, sql: "SELECT count(*) FROM \(TableSQL(type: type).table)") ?? 0
            }
            return counts
        }
    }

    /// Every row of `type` in key order, as wire values: key, fields, revision.
    public func rows(of type: String) throws -> [[JSONValue]] {
        guard let entity = try metadata().schema.type(named: type) else {
            throw SeedError(.unusable, "the seed has no type '\(type)'")
        }
        let table = TableSQL(type: entity)
        return try read { db in
            try Row.fetchAll(db, sql: "SELECT \(table.columns) FROM \(table.table) ORDER BY \(table.key)")
                .map { ValueMapping.jsonRow($0, of: entity) }
        }
    }

    /// Stops what another thread is reading from the file now (such as ``quickCheck()``): it
    /// throws `SQLITE_INTERRUPT`.
    public func interrupt() {
        queue.interrupt()
    }

    /// `PRAGMA quick_check`: `nil` when the file is sound, else the first problems SQLite found.
    public func quickCheck() throws -> String? {
        let problems = try read { db in try String.fetchAll(db, sql: "PRAGMA quick_check(3)") }
        return problems == ["ok"] ? nil : problems.joined(separator: "; ")
    }

    /// The `ContentDigest` of the rows and metadata as they are now, to compare with
    /// ``SeedMetadata/contentSHA256``.
    public func contentDigest(of schema: DatasetSchema) throws -> String {
        try read { db in try ContentDigest.compute(db, schema: schema) }
    }

    /// Checks the content against the digest the seed carries, for a seed that comes without a
    /// manifest (whose SHA-256 would cover the whole file).
    ///
    /// - Throws: ``SeedError/Code/damaged`` when the content differs from the digest, or the seed
    ///   carries none (nothing then proves it intact).
    public func checkContent(_ metadata: SeedMetadata) throws {
        guard let recorded = metadata.contentSHA256 else {
            throw SeedError(
                .damaged,
                "\(path) carries no content digest and has no manifest beside it, so nothing proves it intact; ship its manifest, or rebuild it with this version of seed-build"
            )
        }
        let digest = try contentDigest(of: metadata.schema)
        guard digest == recorded else {
            throw SeedError(
                .damaged,
                "\(path) is damaged: its rows hash to \(digest), but it was built with content_sha256 \(recorded); a value was changed after the build"
            )
        }
    }

    /// The page size and the version of the SQLite library reading the file.
    package func storage() throws -> (pageSize: Int, sqliteVersion: String) {
        try read { db in
            (
                try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 0,
                try String.fetchOne(db, sql: "SELECT sqlite_version()") ?? ""
            )
        }
    }

    public func close() throws {
        try queue.close()
    }
}
