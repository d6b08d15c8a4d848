import Foundation
import GRDB
import SeedSyncModel
import SeedSyncSQL

extension SeedWriter {
    /// Writes the finished seed to `destination`, then closes and removes the work file.
    ///
    /// Fails unless every type was downloaded. The work file is checkpointed, its build cursors
    /// dropped and a placeholder `content_sha256` written; `VACUUM INTO destination` then writes a
    /// new, compact file in rollback-journal mode (`journal_mode=DELETE`) holding the tables. Two
    /// things follow at once, each on its own connection: the ``ContentDigest`` of the work file's
    /// rows, and, in the new file, the reference indexes and the check that every reference
    /// resolves (read from those indexes, a lookup per distinct value). The digest then replaces
    /// the placeholder, a value of the same length.
    ///
    /// A `VACUUM` in place would carry the work file's history in its header (the change counter
    /// grows with every session), so a resumed build would differ by a few bytes; the new file
    /// depends on its rows alone.
    ///
    /// ```swift
    /// try await writer.finish(to: "demo.sqlite.new")
    /// ```
    ///
    /// - Throws: ``SeedError`` when a type is incomplete or a reference dangles. The work file is
    ///   kept then, with its cursors, and nothing is left at `destination`.
    package func finish(to destination: String) async throws {
        try await checkComplete()
        DatabaseFiles(destination).remove()
        let cursors = try await dropCursors()
        do {
            try await copyTables(to: destination)
            try await completeCopy(at: destination)
        } catch {
            DatabaseFiles(destination).remove()
            // Not when cancelled (GRDB refuses the write then): the next open puts complete cursors back.
            try? await queue.write { db in
                try Self.createBuildTable(db, cursors: cursors)
                try db.execute(sql: "PRAGMA cache_size = -\(Self.cacheKiB)")
            }
            throw error
        }
        try queue.close()
        DatabaseFiles(path).remove()
    }

    /// Fails unless every type's snapshot was downloaded.
    private func checkComplete() async throws {
        let incomplete = try await queue.read { db in
            try String.fetchAll(
                db, sql: "SELECT type FROM \(SeedFormat.buildTable) WHERE complete = 0 ORDER BY type")
        }
        guard incomplete.isEmpty else {
            throw SeedError(.unusable, "the snapshot of \(incomplete.joined(separator: ", ")) is incomplete")
        }
    }

    /// Checkpoints the work file, drops its build cursors (and any index an older version's
    /// finish made there), writes the placeholder digest and sets the schema cookie to 1.
    ///
    /// - Returns: the cursors, to put back when a later step fails.
    private func dropCursors() async throws -> [[DatabaseValue]] {
        try await Self.onFile(path) { [path] in
            try await queue.writeWithoutTransaction { db in
                // The download's cache is not needed again: memory goes to the copy's sorter.
                try db.execute(sql: "PRAGMA cache_size = -\(Self.finishKiB)")
                guard try db.checkpointCompletely() else {
                    throw SeedError(.busy, "\(path) could not be checkpointed completely: another process reads it")
                }
                let cursors = try Row.fetchAll(db, sql: "SELECT type, after, complete FROM \(SeedFormat.buildTable)")
                    .map { [$0[0], $0[1], $0[2]] as [DatabaseValue] }
                try db.inTransaction {
                    let indexes = try String.fetchAll(
                        db, sql: "SELECT name FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL")
                    for index in indexes { try db.execute(sql: "DROP INDEX \(index.quotedDatabaseIdentifier)") }
                    try db.execute(sql: "DROP TABLE \(SeedFormat.buildTable)")
                    try SeedMetadata.save(contentSHA256: Self.placeholderDigest, in: db)
                    // VACUUM INTO gives the copy this cookie plus one: not the count of the work
                    // file's schema changes, which a build resumed in its finish makes more of.
                    try db.execute(sql: "PRAGMA schema_version = 1")
                    guard try Int.fetchOne(db, sql: "PRAGMA schema_version") == 1 else {
                        throw SeedError(.unusable, "\(path): SQLite refused to set the schema cookie (defensive mode?)")
                    }
                    return .commit
                }
                return cursors
            }
        }
    }

    /// Writes the work file's tables to a new file at `destination` with `VACUUM INTO`.
    private func copyTables(to destination: String) async throws {
        try await Self.onFile(destination) {
            try await queue.writeWithoutTransaction { db in
                try db.execute(sql: "VACUUM INTO ?", arguments: [destination])
            }
        }
    }

    /// Indexes and checks the copy at `destination` while the work file's digest is computed, then
    /// writes the digest into the copy.
    private func completeCopy(at destination: String) async throws {
        let copy = try Self.onFile(destination) { try Self.openCopy(at: destination) }
        do {
            async let digest = Self.onFile(path) { [schema] in
                try await queue.read { db in try ContentDigest.compute(db, schema: schema) }
            }
            try await Self.onFile(destination) {
                try await copy.writeWithoutTransaction { db in try indexAndCheck(db) }
            }
            let content = try await digest
            try await Self.onFile(destination) {
                try await copy.write { db in try SeedMetadata.save(contentSHA256: content, in: db) }
            }
            try copy.close()
        } catch {
            try? copy.close()
            throw error
        }
    }

    /// Creates the reference indexes in schema order, then fails if a reference dangles.
    private func indexAndCheck(_ db: Database) throws {
        for type in schema.types {
            for statement in tables[type.name]!.createIndexes { try db.execute(sql: statement) }
        }
        if let dangling = try TableSQL.firstDanglingReference(among: schema.types, tables: tables, in: db) {
            let value = ValueMapping.jsonKey(dangling.value).keyString ?? "?"
            throw SeedError.invalidData(
                "\(dangling.type.name).\(dangling.field.name) holds \(value), a reference to a missing row of \(dangling.target) at the final revision"
            )
        }
    }

    /// Stands for the digest in the copy until it is known: as long as a digest, so the digest
    /// takes its place without moving anything else in the file. The digest does not cover it.
    private static let placeholderDigest = String(repeating: "0", count: 64)

    /// The finished copy, written by this process alone until it is published: no journal, no
    /// syncs (the publisher syncs it), the finish's page cache.
    private static func openCopy(at path: String) throws -> DatabaseQueue {
        try openQueue(
            at: path, pragmas: "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA cache_size = -\(finishKiB);"
        )
    }
}
