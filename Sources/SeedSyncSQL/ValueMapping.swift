import Foundation
package import GRDB
package import SeedSyncModel

/// The one mapping between wire values (already normalized by validation) and SQLite values,
/// GRDB's `DatabaseValue`; ``StatementValues`` goes through it too.
///
/// | Field type  | SQLite storage          | Wire form         |
/// | ----------- | ----------------------- | ----------------- |
/// | `integer`   | INTEGER                 | integer           |
/// | `real`      | REAL, integers included | number (a double) |
/// | `text`      | TEXT                    | string            |
/// | `boolean`   | INTEGER 0 or 1          | `true` or `false` |
/// | `timestamp` | TEXT (RFC 3339)         | string            |
/// | `blob`      | BLOB                    | base64 string     |
/// | `json`      | TEXT, the compact JSON  | the JSON value    |
/// | any, null   | NULL                    | `null`            |
/// | key         | INTEGER or TEXT         | integer or string |
///
/// Reading goes by storage class; the field type only says what an INTEGER is. Invalid base64
/// is stored as an empty blob, arrays and objects (which validation refuses) as NULL.
package enum ValueMapping {
    package static func databaseValue(_ value: JSONValue, as type: FieldType) -> DatabaseValue {
        switch (value, type) {
        case (.null, _): .null
        case (_, .json): String(decoding: JSONWriter.bytes(of: value), as: UTF8.self).databaseValue
        case (.bool(let flag), _): (flag ? 1 : 0).databaseValue
        case (.int(let number), .real): Double(number).databaseValue
        case (.int(let number), _): number.databaseValue
        case (.double(let number), _): number.databaseValue
        case (.string(let text), .blob): (Data(base64Encoded: text) ?? Data()).databaseValue
        case (.string(let text), _): text.databaseValue
        case (.array, _), (.object, _): .null
        }
    }

    package static func databaseValue(key: JSONValue) -> DatabaseValue {
        switch key {
        case .int(let number): number.databaseValue
        case .string(let text): text.databaseValue
        default: .null
        }
    }

    /// `type` is `nil` for a key or the revision: integers as they are.
    package static func jsonValue(_ value: DatabaseValue, as type: FieldType?) -> JSONValue {
        switch (value.storage, type) {
        case (.null, _): .null
        case (.string(let text), .json): (try? JSONParser.parse(Array(text.utf8))) ?? .null
        case (.int64(let number), _): jsonValue(integer: number, as: type)
        case (.double(let number), _): .double(number)
        case (.string(let text), _): .string(text)
        case (.blob(let data), _): .string(data.base64EncodedString())
        }
    }

    /// An INTEGER as a wire value of `type`: a flag for a `boolean`, a double for a `real`.
    package static func jsonValue(integer number: Int64, as type: FieldType?) -> JSONValue {
        switch type {
        case .boolean: .bool(number != 0)
        case .real: .double(Double(number))
        default: .int(number)
        }
    }

    package static func jsonKey(_ value: DatabaseValue) -> JSONValue {
        switch value.storage {
        case .int64(let number): .int(number)
        case .string(let text): .string(text)
        default: .null
        }
    }

    /// Arguments for ``TableSQL/update``: fields, revision, key.
    package static func updateArguments(_ row: RowValues, of type: EntityType, revision: Int64) -> StatementArguments {
        StatementArguments(fieldValues(row, of: type) + [revision.databaseValue, databaseValue(key: row.key)])
    }

    private static func fieldValues(_ row: RowValues, of type: EntityType) -> [DatabaseValue] {
        zip(type.fields, row.values).map { databaseValue($1, as: $0.type) }
    }

    /// One stored row as wire values, in ``TableSQL/columns`` order: key, fields, revision.
    package static func jsonRow(_ row: Row, of type: EntityType) -> [JSONValue] {
        var values: [JSONValue] = [jsonKey(row[0])]
        values.reserveCapacity(type.fields.count + 2)
        for (index, field) in type.fields.enumerated() {
            values.append(jsonValue(row[index + 1], as: field.type))
        }
        // A damaged file may hold anything there: a revision that is not an integer reads as null
        // (the seed's checks report it) instead of stopping the process.
        let revision: DatabaseValue = row[type.fields.count + 1]
        values.append(Int64.fromDatabaseValue(revision).map(JSONValue.int) ?? .null)
        return values
    }
}
