import Foundation
import GRDB
import SeedSyncModel
import SeedSyncSQL

/// The checks of one plain seed file, in report order.
struct SeedChecks {
    let path: String
    let manifest: SeedManifest?
    let options: SeedVerifier.Options
    /// The file the user named, when `path` is its decompressed copy.
    var besideFile: String?

    init(path: String, manifest: SeedManifest?, options: SeedVerifier.Options, besideFile: String? = nil) {
        self.path = path
        self.manifest = manifest
        self.options = options
        self.besideFile = besideFile
    }

    func run(into report: inout VerificationReport) async {
        let path = self.path
        let digest = Task.detached { try FileDigest(ofFile: path) }
        let header = checkHeader(into: &report)
        guard let header, let seed = open(into: &report) else {
            digest.cancel()
            return
        }
        defer { try? seed.close() }
        checkJournal(header, into: &report)
        guard let metadata = checkFormat(seed, into: &report) else { return }
        report.revision = metadata.revision
        // The slowest check runs on a connection of its own while this one does the others.
        let integrity = Task.detached { Self.checkIntegrity(path) }
        var others = VerificationReport(seed: path)
        checkForeignKeys(seed, into: &others)
        checkFreePages(seed, into: &others)
        checkRevisions(seed, metadata, into: &others)
        checkSchema(seed, metadata, into: &others)
        checkContent(seed, metadata, into: &others)
        checkExpectations(metadata, into: &others)
        report.checks += await integrity.value.checks + others.checks
        guard let manifest else { return }
        do {
            checkManifest(manifest, seed: seed, metadata: metadata, digest: try await digest.value, into: &report)
        } catch {
            report.record("manifest", false, "cannot hash the seed: \(error)")
        }
    }

    /// The 100-byte SQLite header: magic, page size, and a file size of exactly `page count × page size`.
    private func checkHeader(into report: inout VerificationReport) -> SQLiteHeader? {
        guard let header = SQLiteHeader(path: path) else {
            report.record("sqlite-file", false, "not a SQLite 3 database file")
            return nil
        }
        let expected = Int64(header.pageCount) * Int64(header.pageSize)
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int64) ?? nil ?? -1
        if header.pageSize != SeedFormat.pageSize || !header.isUTF8 {
            report.record(
                "sqlite-file", false,
                "page size \(header.pageSize) and \(header.isUTF8 ? "UTF-8" : "UTF-16") text; seeds use \(SeedFormat.pageSize)-byte pages and UTF-8"
            )
        } else if size == expected {
            report.record("sqlite-file", true, "\(header.pageCount) pages of \(header.pageSize) bytes")
        } else {
            let problem = size < expected ? "truncated" : "followed by \(size - expected) bytes of junk"
            report.record(
                "sqlite-file", false,
                "\(size) bytes, but the header says \(header.pageCount) pages of \(header.pageSize) bytes (\(expected) bytes): \(problem)"
            )
        }
        return header
    }

    private func open(into report: inout VerificationReport) -> SeedFile? {
        do {
            return try SeedFile(path: path, memoryMapped: true)
        } catch {
            report.record("seed-format", false, "\(error)")
            return nil
        }
    }

    private func checkJournal(_ header: SQLiteHeader, into report: inout VerificationReport) {
        let leftovers = DatabaseFiles(path).companions.filter {
            FileManager.default.fileExists(atPath: $0)
        }
        if !header.isRollbackJournal {
            report.record("journal-mode", false, "the file is in WAL mode; a seed must use journal_mode=DELETE")
        } else if !leftovers.isEmpty {
            report.record("journal-mode", false, "leftover \(leftovers.joined(separator: ", ")) beside the seed")
        } else {
            report.record("journal-mode", true, "DELETE, no -wal, -shm or -journal beside it")
        }
    }

    private func checkFormat(_ seed: SeedFile, into report: inout VerificationReport) -> SeedMetadata? {
        do {
            let metadata = try seed.metadata()
            report.record(
                "seed-format", true,
                "application id \(SeedFormat.applicationID), format \(metadata.formatVersion), dataset \(metadata.dataset), revision \(metadata.revision)"
            )
            return metadata
        } catch {
            report.record("seed-format", false, "\(error)")
            return nil
        }
    }

    /// `PRAGMA integrity_check`, on a connection of its own.
    private static func checkIntegrity(_ path: String) -> VerificationReport {
        var report = VerificationReport(seed: path)
        Self.record("integrity", into: &report) {
            let seed = try SeedFile(path: path, memoryMapped: true)
            defer { try? seed.close() }
            let problems = try seed.read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check") }
            return (problems == ["ok"], problems == ["ok"] ? "ok" : problems.prefix(3).joined(separator: "; "))
        }
        return report
    }

    private func checkForeignKeys(_ seed: SeedFile, into report: inout VerificationReport) {
        Self.record("foreign-keys", into: &report) {
            let violations = try seed.read { db in try Row.fetchAll(db, sql: "PRAGMA foreign_key_check") }
            guard let first = violations.first else { return (true, "every reference resolves") }
            return (
                false,
                "\(violations.count) dangling reference(s), the first in \(first[0] as String) to \(first[2] as String)"
            )
        }
    }

    private func checkFreePages(_ seed: SeedFile, into report: inout VerificationReport) {
        Self.record("free-pages", into: &report) {
            let free = try seed.read { db in try Int.fetchOne(db, sql: "PRAGMA freelist_count") ?? 0 }
            return (free == 0, free == 0 ? "none" : "\(free) free pages; the seed was not vacuumed")
        }
    }

    private func checkRevisions(_ seed: SeedFile, _ metadata: SeedMetadata, into report: inout VerificationReport) {
        Self.record("revisions", into: &report) {
            for type in metadata.schema.types {
                let table = TableSQL(type: type)
                let newest = try seed.read { db in
                    try Int64.fetchOne(db, sql: "SELECT max(\(quote(SchemaNames.revisionColumn))) FROM \(table.table)")
                }
                if let newest, newest > metadata.revision {
                    return (
                        false,
                        "\(type.name) has a row at revision \(newest), after the embedded revision \(metadata.revision)"
                    )
                }
            }
            return (true, "no row is after revision \(metadata.revision)")
        }
    }

    /// The stored hash matches the stored schema, and the tables in the file are exactly the ones it describes.
    private func checkSchema(_ seed: SeedFile, _ metadata: SeedMetadata, into report: inout VerificationReport) {
        Self.record("schema", into: &report) {
            if let problem = try seed.structureProblem(metadata) { return (false, problem) }
            return (true, "hash \(metadata.schemaHash) matches the \(metadata.schema.types.count) tables")
        }
    }

    /// The rows and metadata against the content digest recorded at build time. A seed without a
    /// digest passes only on its manifest: with neither, nothing proves a value was not changed.
    private func checkContent(_ seed: SeedFile, _ metadata: SeedMetadata, into report: inout VerificationReport) {
        guard let recorded = metadata.contentSHA256 else {
            if manifest != nil {
                report.skip("content", "no content_sha256 in the metadata; the manifest's SHA-256 covers the file")
            } else {
                report.record(
                    "content", false,
                    "no content_sha256 in the metadata and no manifest: nothing proves the values intact; rebuild the seed or ship its manifest"
                )
            }
            return
        }
        Self.record("content", into: &report) {
            try seed.checkContent(metadata)
            return (true, "the rows hash to content_sha256 \(recorded)")
        }
    }

    private func checkExpectations(_ metadata: SeedMetadata, into report: inout VerificationReport) {
        if let revision = options.expectedRevision {
            report.record(
                "expected-revision", metadata.revision == revision,
                "revision \(metadata.revision), expected \(revision)")
        }
        if let version = options.expectedSchemaVersion {
            report.record(
                "expected-schema-version", metadata.schemaVersion == version,
                "schema version \(metadata.schemaVersion), expected \(version)")
        }
    }

    private func checkManifest(
        _ manifest: SeedManifest, seed: SeedFile, metadata: SeedMetadata, digest: FileDigest,
        into report: inout VerificationReport
    ) {
        Self.record("manifest", into: &report) {
            let counts = try seed.rowCounts(of: metadata.schema)
            let name = URL(fileURLWithPath: besideFile.map { String($0.dropLast(3)) } ?? path).lastPathComponent
            let mismatches =
                (manifest.file == name ? [] : ["file \(manifest.file), not \(name)"])
                + manifest.mismatches(digest: digest, metadata: metadata, rowCounts: counts)
            return (
                mismatches.isEmpty,
                mismatches.isEmpty
                    ? "size, SHA-256, revision, schema and row counts match"
                    : "manifest says " + mismatches.joined(separator: "; ")
            )
        }
    }

    private static func record(
        _ name: String, into report: inout VerificationReport, _ check: () throws -> (Bool, String)
    ) {
        do {
            let (passed, detail) = try check()
            report.record(name, passed, detail)
        } catch let error as DatabaseError {
            report.record(name, false, "SQLite: \(error.reason)")
        } catch {
            report.record(name, false, "\(error)")
        }
    }
}

extension SeedFile {
    /// What is wrong with the file's structure, or `nil`: the stored hash must be the stored
    /// schema's, `user_version` its version, and the tables and indexes exactly the ones it
    /// describes plus the metadata table (nothing else: an outbox or any table of an app's).
    package func structureProblem(_ metadata: SeedMetadata) throws -> String? {
        guard metadata.schema.hash == metadata.schemaHash else {
            return "schema_hash \(metadata.schemaHash) is not the hash of the stored schema (\(metadata.schema.hash))"
        }
        let expected = Set(
            [SeedMetadata.createTable] + metadata.schema.types.flatMap { TableSQL(type: $0).create(withoutRowID: true) }
        )
        let (found, userVersion) = try read { db in
            (
                Set(try String.fetchAll(db, sql: "SELECT sql FROM sqlite_schema WHERE sql IS NOT NULL")),
                try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
            )
        }
        guard userVersion == metadata.schemaVersion else {
            return "user_version \(userVersion) is not the schema version \(metadata.schemaVersion)"
        }
        guard found == expected else {
            let extra = found.subtracting(expected).count
            let missing = expected.subtracting(found).count
            return
                "the tables do not match the stored schema (\(missing) definitions missing or changed, \(extra) unexpected)"
        }
        return nil
    }
}
