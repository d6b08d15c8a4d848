import Foundation
import Logging
import PostgresNIO
package import SeedSyncModel

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

    /// Every version, oldest first.
    static func history(on connection: PostgresConnection, logger: Logger) async throws -> SchemaHistory {
        let decoder = JSONDecoder()
        var versions: [SchemaVersion] = []
        for (json, revision, renames) in try await connection.rows(
            "SELECT schema, revision, renames FROM seedsync._schemas ORDER BY version", logger: logger
        ).decode((String, Int64, String).self) {
            versions.append(
                SchemaVersion(
                    schema: try decoder.decode(DatasetSchema.self, from: Data(json.utf8)), revision: revision,
                    renames: try decoder.decode([FieldRename].self, from: Data(renames.utf8))))
        }
        return try SchemaHistory(versions: versions)
    }

    /// Records `version` and makes its schema the state's.
    static func insert(_ version: SchemaVersion, on connection: PostgresConnection, logger: Logger) async throws {
        let encoder = JSONEncoder.stable()
        let schema = String(decoding: try encoder.encode(version.schema), as: UTF8.self)
        var binds = PostgresBindings()
        binds.append(version.number)
        binds.append(version.revision)
        binds.append(schema)
        binds.append(String(decoding: try encoder.encode(version.renames), as: UTF8.self))
        _ = try await connection.rows(
            PostgresQuery(
                unsafeSQL: "INSERT INTO seedsync._schemas (version, revision, schema, renames) VALUES ($1, $2, $3, $4)",
                binds: binds), logger: logger)
        var schemaBind = PostgresBindings()
        schemaBind.append(schema)
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

    /// The versions of `history` and the SQL of its newest version's tables, whose `columns`
    /// (by type, as the catalog has them) say what written values are cast to.
    init(_ history: SchemaHistory, tableSchema: String, columns: [String: [TableCheck.Column]] = [:]) {
        versions = ServedVersions(history)
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
    /// The versions of `history` with the catalog's columns of its newest version's tables.
    static func read(
        _ history: SchemaHistory, tableSchema: String, on connection: PostgresConnection, logger: Logger
    ) async throws -> ServedPostgresTables {
        var columns: [String: [TableCheck.Column]] = [:]
        for type in history.newest.schema.types {
            let table = PostgresTableSQL(type: type, tableSchema: tableSchema).table
            columns[type.name] = try await TableCheck.columns(of: table, on: connection, logger: logger)
        }
        return ServedPostgresTables(history, tableSchema: tableSchema, columns: columns)
    }
}
