import SeedSyncModel

/// The SQL of one entity type's table. Names are schema names, checked by
/// ``DatasetSchema/validate()`` to match `^[a-z][a-z0-9_]{0,62}$`, so quoting them is enough.
struct TableSQL: Sendable {
    let type: EntityType

    var table: String { quote(type.name) }
    var key: String { quote(type.primaryKey.name) }
    private var fieldColumns: [String] { type.fields.map { quote($0.name) } }
    /// Key, fields, revision: the column order of snapshots and writes.
    var columns: String { ([key] + fieldColumns + [quote(SchemaNames.revisionColumn)]).joined(separator: ", ") }

    /// `CREATE TABLE` with typed columns, deferred foreign keys, and an index per reference.
    var create: [String] {
        let keyType = type.primaryKey.type == .integer ? "INTEGER" : "TEXT"
        var definitions = ["\(key) \(keyType) PRIMARY KEY NOT NULL"]
        for field in type.fields {
            var definition = "\(quote(field.name)) \(Self.columnType(field.type))"
            if !field.nullable { definition += " NOT NULL" }
            definitions.append(definition)
        }
        definitions.append("\(quote(SchemaNames.revisionColumn)) INTEGER NOT NULL")
        for field in type.fields {
            guard let target = field.references else { continue }
            definitions.append(
                "FOREIGN KEY (\(quote(field.name))) REFERENCES \(quote(target)) DEFERRABLE INITIALLY DEFERRED"
            )
        }
        let indexes = type.fields.filter { $0.references != nil }.map {
            "CREATE INDEX \(quote("\(type.name)_\($0.name)_index")) ON \(table) (\(quote($0.name)))"
        }
        return ["CREATE TABLE \(table) (\n  \(definitions.joined(separator: ",\n  "))\n)"] + indexes
    }

    var insert: String {
        "INSERT INTO \(table) (\(columns)) VALUES (\(placeholders(type.fields.count + 2)))"
    }

    var upsert: String {
        let assignments = (type.fields.map(\.name) + [SchemaNames.revisionColumn])
            .map { "\(quote($0)) = excluded.\(quote($0))" }
            .joined(separator: ", ")
        return insert + " ON CONFLICT (\(key)) DO UPDATE SET \(assignments)"
    }

    var update: String {
        let assignments = (type.fields.map(\.name) + [SchemaNames.revisionColumn])
            .map { "\(quote($0)) = ?" }
            .joined(separator: ", ")
        return "UPDATE \(table) SET \(assignments) WHERE \(key) = ?"
    }

    var delete: String { "DELETE FROM \(table) WHERE \(key) = ?" }
    var exists: String { "SELECT 1 FROM \(table) WHERE \(key) = ?" }
    var keys: String { "SELECT \(key) FROM \(table) ORDER BY \(key)" }

    func snapshot(after: Bool) -> String {
        "SELECT \(columns) FROM \(table)\(after ? " WHERE \(key) > ?" : "") ORDER BY \(key) LIMIT ?"
    }

    /// The first row whose `field` holds `?`.
    func referrer(through field: Field) -> String {
        "SELECT \(key) FROM \(table) WHERE \(quote(field.name)) = ? LIMIT 1"
    }

    /// The first row whose `field` points at a missing row.
    func dangling(through field: Field, target: TableSQL) -> String {
        let column = "t.\(quote(field.name))"
        return """
            SELECT t.\(key), \(column) FROM \(table) t LEFT JOIN \(target.table) r ON r.\(target.key) = \(column) \
            WHERE \(column) IS NOT NULL AND r.\(target.key) IS NULL LIMIT 1
            """
    }

    static func columnType(_ type: FieldType) -> String {
        switch type {
        case .integer, .boolean: "INTEGER"
        case .real: "REAL"
        case .text, .timestamp: "TEXT"
        case .blob: "BLOB"
        }
    }
}

func quote(_ name: String) -> String { "\"\(name)\"" }

private func placeholders(_ count: Int) -> String {
    Array(repeating: "?", count: count).joined(separator: ", ")
}
