import Foundation
import Logging
import PostgresNIO
import SeedSyncModel
package import SeedSyncStore

/// `seedsync._schemas`: every schema version of the store, one row each, created when a store
/// made before it is opened (with the state's schema as its one version, made at revision 0).
enum PostgresSchemaRecords {
    static let createTable =
        "CREATE TABLE IF NOT EXISTS seedsync._schemas (version integer PRIMARY KEY, revision bigint NOT NULL, schema text NOT NULL, renames text NOT NULL)"

    /// Creates the table when missing and records the state's schema as version one when empty.
    static func prepare(on connection: PostgresConnection, logger: Logger) async throws {
        _ = try await connection.rows(PostgresQuery(unsafeSQL: createTable), logger: logger)
        _ = try await connection.rows(
            """
            INSERT INTO seedsync._schemas (version, revision, schema, renames)
            SELECT (schema::json ->> 'schemaVersion')::integer, 0, schema, '[]' FROM seedsync._state
            WHERE id = 1 AND NOT EXISTS (SELECT FROM seedsync._schemas) ON CONFLICT DO NOTHING
            """, logger: logger)
    }

    /// Every version, oldest first: the ones that read, and the unreadable ones after them
    /// (``SchemaHistory/read(_:)``).
    ///
    /// - Throws: ``PostgresStoreError`` `notInitialized` when not even the first version reads.
    static func versions(on connection: PostgresConnection, logger: Logger) async throws -> ServedVersions {
        var rows: [StoredVersion] = []
        for (number, revision, schema, renames) in try await connection.rows(
            "SELECT version, revision, schema, renames FROM seedsync._schemas ORDER BY version", logger: logger
        ).decode((Int, Int64, String, String).self) {
            rows.append(StoredVersion(number: number, revision: revision, schema: schema, renames: renames))
        }
        do {
            return try ServedVersions.reading(rows)
        } catch {
            throw PostgresStoreError(
                .notInitialized, "the store's first schema version (seedsync._schemas) cannot be read: \(error.reason)")
        }
    }

    /// Reads back the version `upgrade` wrote, as every server will read it, after the versions of
    /// `history` (read in the same transaction).
    ///
    /// - Throws: `SchemaUpgradeError` when it does not read back as written: the transaction is
    ///   rolled back, and the version is never stored.
    static func readBack(
        _ upgrade: SchemaUpgrade, after history: SchemaHistory, on connection: PostgresConnection, logger: Logger
    ) async throws {
        var binds = PostgresBindings()
        binds.append(upgrade.version.number)
        var stored: StoredVersion?
        for (number, revision, schema, renames) in try await connection.rows(
            PostgresQuery(
                unsafeSQL: "SELECT version, revision, schema, renames FROM seedsync._schemas WHERE version = $1",
                binds: binds), logger: logger
        ).decode((Int, Int64, String, String).self) {
            stored = StoredVersion(number: number, revision: revision, schema: schema, renames: renames)
        }
        try SchemaHistory.readBack(stored, of: upgrade, after: history)
    }

    /// Records `version` and makes its schema the state's.
    static func insert(_ version: SchemaVersion, on connection: PostgresConnection, logger: Logger) async throws {
        let stored = try StoredVersion(version)
        var binds = PostgresBindings()
        binds.append(stored.number)
        binds.append(stored.revision)
        binds.append(stored.schema)
        binds.append(stored.renames)
        _ = try await connection.rows(
            PostgresQuery(
                unsafeSQL: "INSERT INTO seedsync._schemas (version, revision, schema, renames) VALUES ($1, $2, $3, $4)",
                binds: binds), logger: logger)
        var schemaBind = PostgresBindings()
        schemaBind.append(stored.schema)
        _ = try await connection.rows(
            PostgresQuery(unsafeSQL: "UPDATE seedsync._state SET schema = $1 WHERE id = 1", binds: schemaBind),
            logger: logger)
    }

    /// The newest version's number, as a column of a statement that reads `seedsync._state s`.
    static let newestColumn = "(SELECT max(version) FROM seedsync._schemas)"
}

/// The schema versions a PostgreSQL store serves and the SQL of the newest version's tables.
package struct ServedPostgresTables: Sendable {
    package let versions: ServedVersions
    let tables: [String: PostgresTableSQL]
    /// Every name each type's fields had in any version, with the field's type: how a logged row's
    /// members are read, whatever version they were written in.
    let memberTypes: [String: [String: FieldType]]

    /// The versions and the SQL of the newest version's tables, whose `columns` (by type, as the
    /// catalog has them) say what written values are cast to.
    init(_ versions: ServedVersions, tableSchema: String, columns: [String: [TableCheck.Column]] = [:]) {
        self.versions = versions
        let history = versions.history
        tables = Dictionary(
            uniqueKeysWithValues: history.newest.schema.types.map {
                ($0.name, PostgresTableSQL(type: $0, tableSchema: tableSchema, columns: columns[$0.name] ?? []))
            })
        var memberTypes: [String: [String: FieldType]] = [:]
        for version in history.versions {
            for type in version.schema.types {
                for field in type.fields { memberTypes[type.name, default: [:]][field.name] = field.type }
            }
        }
        self.memberTypes = memberTypes
    }

    var schema: DatasetSchema { versions.schema }
}

extension ServedPostgresTables {
    /// The stored versions with the catalog's columns of the newest version's tables.
    static func read(tableSchema: String, on connection: PostgresConnection, logger: Logger) async throws
        -> ServedPostgresTables
    {
        let versions = try await PostgresSchemaRecords.versions(on: connection, logger: logger)
        var columns: [String: [TableCheck.Column]] = [:]
        for type in versions.schema.types {
            let table = PostgresTableSQL(type: type, tableSchema: tableSchema).table
            columns[type.name] = try await TableCheck.columns(of: table, on: connection, logger: logger)
        }
        return ServedPostgresTables(versions, tableSchema: tableSchema, columns: columns)
    }
}
