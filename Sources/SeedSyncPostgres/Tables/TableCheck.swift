import Logging
import PostgresNIO
import SeedSyncModel

/// Checks that an existing table can be served as a type: its primary key is the type's key
/// alone, and its columns are exactly the key and the fields, each of a PostgreSQL type that maps
/// to the field's type (see ``WireRow``), and not nullable where the field is not.
package struct TableCheck {
    let table: PostgresTableSQL
    let tableSchema: String

    /// The PostgreSQL types (`pg_type.typname`) each field type accepts; besides these, a `text`
    /// field accepts an enum type's column (its label), and a `real` field a `numeric` column only
    /// while its values keep their digits as a double (see ``WireRow``).
    static let acceptedTypes: [FieldType: Set<String>] = [
        .integer: ["int2", "int4", "int8"],
        .real: ["float4", "float8", "numeric"],
        .text: ["text", "varchar", "bpchar", "uuid", "numeric", "date", "time", "interval"],
        .boolean: ["bool"],
        .timestamp: ["timestamptz", "timestamp"],
        .blob: ["bytea"],
        .json: Set(["json", "jsonb"]).union(arrayTypes),
    ]

    /// The one-dimensional or nested arrays a `json` field accepts: of the types whose elements
    /// ``WireRow`` reads exactly as `to_json` writes them.
    static let arrayTypes: Set<String> = [
        "_int2", "_int4", "_int8", "_float4", "_float8", "_numeric", "_text", "_varchar", "_bpchar", "_bool", "_uuid",
    ]

    /// The columns a key can be: integers for `integer` keys, text for `text` keys.
    static let keyTypes: Set<String> = ["int2", "int4", "int8", "text", "varchar"]

    /// Whether `column` can hold a field of `type`.
    static func accepts(_ column: Column, as type: FieldType) -> Bool {
        acceptedTypes[type]!.contains(column.typeName) || (type == .text && column.isEnum)
    }

    /// The field type a column is served as when a schema is read from the tables: `numeric` as a
    /// `real` when its declared precision fits a double (15 digits), else as exact `text`; `uuid`,
    /// enums, `date`, `time` and `interval` as `text`; `json`, `jsonb` and arrays as `json`. `nil`
    /// for a type no field maps.
    static func fieldType(of column: Column) -> FieldType? {
        if column.typeName == "numeric" { return (column.numericPrecision ?? 1000) <= 15 ? .real : .text }
        if column.isEnum { return .text }
        return FieldType.allCases.first { acceptedTypes[$0]!.contains(column.typeName) }
    }

    /// A column as the catalog describes it.
    package struct Column {
        var name: String
        var typeName: String
        var formattedType: String
        var notNull: Bool
        /// The column's default as PostgreSQL prints it (`'x'::text`, `0`, `now()`), if any.
        var defaultExpression: String? = nil
        /// `pg_type.typtype`: `b` a base type, `e` an enum, `d` a domain, …
        var typeKind: String = "b"
        /// Whether the column is generated (`GENERATED ALWAYS AS (…) STORED`): PostgreSQL computes
        /// it, no write may set it, so it is never served (and never in the way of a table's check).
        var isGenerated = false

        var isEnum: Bool { typeKind == "e" }

        /// The declared precision of a `numeric(p, s)` column, `nil` when none is declared.
        var numericPrecision: Int? {
            guard typeName == "numeric", let open = formattedType.firstIndex(of: "(") else { return nil }
            return Int(formattedType[formattedType.index(after: open)...].prefix { $0.isNumber })
        }
    }

    /// Checks the table; with `allowingExtraColumns`, columns no field names (added by the team
    /// and not yet served, see `upgrade`) are accepted.
    func run(on connection: PostgresConnection, logger: Logger, allowingExtraColumns: Bool = false) async throws {
        let name = "\(tableSchema).\(table.type.name)"
        let columns = try await Self.columns(of: table.table, on: connection, logger: logger)
        guard !columns.isEmpty else {
            throw PostgresStoreError.tableMismatch(
                "there is no table \(name) to attach; create it, or fix the type's name in the schema file")
        }
        let keys = try await Self.primaryKey(of: table.table, on: connection, logger: logger)
        let type = table.type
        guard keys == [type.primaryKey.name] else {
            throw PostgresStoreError.tableMismatch(
                "\(name): the primary key must be the column \(type.primaryKey.name) alone, not (\(keys.joined(separator: ", ")))"
            )
        }
        let byName = Dictionary(uniqueKeysWithValues: columns.map { ($0.name, $0) })
        let expected =
            [(type.primaryKey.name, type.primaryKey.type.fieldType, false)]
            + type.fields.map { ($0.name, $0.type, $0.nullable) }
        for (column, fieldType, nullable) in expected {
            guard let found = byName[column] else {
                throw PostgresStoreError.tableMismatch("\(name) has no column \(column), which the schema names")
            }
            if column == type.primaryKey.name, !Self.keyTypes.contains(found.typeName) {
                throw PostgresStoreError.tableMismatch(
                    "\(name).\(column) is \(found.formattedType), which cannot be a key (accepted: \(Self.keyTypes.sorted().joined(separator: ", ")))"
                )
            }
            guard Self.accepts(found, as: fieldType) else {
                let accepted =
                    Self.acceptedTypes[fieldType]!.sorted().joined(separator: ", ")
                    + (fieldType == .text ? ", enum types" : "")
                throw PostgresStoreError.tableMismatch(
                    "\(name).\(column) is \(found.formattedType), which cannot hold a \(fieldType.rawValue) field (accepted: \(accepted))"
                )
            }
            guard !found.isGenerated else {
                throw PostgresStoreError.tableMismatch(
                    "\(name).\(column) is a generated column, which clients could not write: leave it out of the schema (it stays unserved)"
                )
            }
            guard nullable || found.notNull else {
                throw PostgresStoreError.tableMismatch(
                    "\(name).\(column) allows NULL but the schema says it does not; make the column NOT NULL or the field nullable"
                )
            }
        }
        let known = Set(expected.map(\.0))
        if !allowingExtraColumns, let extra = columns.first(where: { !known.contains($0.name) && !$0.isGenerated }) {
            throw PostgresStoreError.tableMismatch(
                "\(name) has a column \(extra.name) the schema does not name; add the field to the schema file")
        }
    }

    /// For a table the store already serves, when a server starts: the columns checked as
    /// ``run(on:logger:allowingExtraColumns:)`` does and its health (``TableHealth``), each
    /// problem logged, not thrown: the server starts and serves every other table, and what the
    /// problem touches is answered `schema_mismatch` until the schema is upgraded (`seed-server
    /// schema upgrade`), the change undone, or the table taken back (`seed-server schema reattach`).
    /// Columns no version names yet are not served, and not reported.
    func runServed(on connection: PostgresConnection, logger: Logger) async throws {
        let name = "\(tableSchema).\(table.type.name)"
        do {
            try await run(on: connection, logger: logger, allowingExtraColumns: true)
        } catch let error as PostgresStoreError where error.code == .tableMismatch {
            let missing = try await Self.columns(of: table.table, on: connection, logger: logger).isEmpty
            logger.error(
                "served table changed",
                metadata: [
                    "error":
                        "\(missing ? "there is no table \(name) (dropped or renamed)" : error.description): what it touches is answered schema_mismatch; \(missing ? "create or rename it back, then run seed-server schema reattach --tables \(table.type.name)" : "upgrade the schema (seed-server schema upgrade) or undo the change")"
                ])
            if missing { return }
        }
        for problem in try await TableHealth.problems(
            of: [table], tableSchema: tableSchema, on: connection, logger: logger)
        {
            logger.error(
                "served table cannot be served",
                metadata: ["error": "\(TableHealth.message(problem.problem!, table: name, type: table.type.name))"])
        }
    }

    /// The live columns of `table`, in order; none when it does not exist.
    static func columns(of table: String, on connection: PostgresConnection, logger: Logger) async throws -> [Column] {
        var binds = PostgresBindings()
        binds.append(table)
        let sql = """
            SELECT a.attname::text, t.typname::text, format_type(a.atttypid, a.atttypmod), a.attnotnull,
              pg_get_expr(d.adbin, d.adrelid), t.typtype::text, a.attgenerated <> ''
            FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
            LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
            WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum
            """
        var columns: [Column] = []
        for (name, typeName, formatted, notNull, defaultExpression, kind, generated) in try await connection.rows(
            PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger
        ).decode((String, String, String, Bool, String?, String, Bool).self) {
            columns.append(
                Column(
                    name: name, typeName: typeName, formattedType: formatted, notNull: notNull,
                    defaultExpression: defaultExpression, typeKind: kind, isGenerated: generated))
        }
        return columns
    }

    /// The columns of `table`'s primary key, in key order.
    static func primaryKey(of table: String, on connection: PostgresConnection, logger: Logger) async throws -> [String]
    {
        var binds = PostgresBindings()
        binds.append(table)
        let sql = """
            SELECT a.attname::text FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
            WHERE i.indrelid = to_regclass($1) AND i.indisprimary ORDER BY array_position(i.indkey::int2[], a.attnum)
            """
        var names: [String] = []
        for name in try await connection.rows(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger)
            .decode(String.self)
        {
            names.append(name)
        }
        return names
    }
}
