import Foundation
import GRDB
import SeedSyncModel
import SeedSyncSQL
import SeedSyncTesting
import Testing

/// The one mapping between wire values and SQLite values (`ValueMapping`), through a real SQLite file:
/// every field type, written by each write path, stored as the documented storage class, and read
/// back as the same wire value by each read path.
@Suite struct ValueCodecTests {
    /// A value written in a field, the storage class SQLite must hold, and the wire value read back.
    struct Sample: Sendable {
        let written: JSONValue
        let storage: String
        let read: JSONValue

        init(_ written: JSONValue, _ storage: String, _ read: JSONValue) {
            self.written = written
            self.storage = storage
            self.read = read
        }
    }

    /// The ways rows reach SQLite: the C API from values (bulk inserts, change sets) and from a
    /// snapshot page's cells (seeds, migrations), GRDB arguments (inserts and updates).
    enum WritePath: CaseIterable, Sendable {
        case statementValues, snapshotCells, valueMappingInsert, valueMappingUpdate
    }

    static func samples(of type: FieldType) -> [Sample] {
        let null = Sample(.null, "null", .null)
        switch type {
        case .integer:
            return [null] + [0, 1, -1, 42, Int64.min, Int64.max].map { Sample(.int($0), "integer", .int($0)) }
        case .real:
            let doubles = [0, 1.5, -0.25, 1e300, -Double.greatestFiniteMagnitude, Double.leastNonzeroMagnitude]
            let integers: [Int64] = [0, 3, -7, Int64.min, Int64.max]
            return [null] + doubles.map { Sample(.double($0), "real", .double($0)) }
                + integers.map { Sample(.int($0), "real", .double(Double($0))) }
        case .text:
            let texts = ["", "plain", "0", "é ✓ 日本語 🎉", "quote \" backslash \\ newline \n tab \t bell \u{7}"]
            return [null] + texts.map { Sample(.string($0), "text", .string($0)) }
        case .boolean:
            return [null, Sample(.bool(true), "integer", .bool(true)), Sample(.bool(false), "integer", .bool(false))]
        case .timestamp:
            let stamps = ["2024-02-29T23:59:59Z", "1970-01-01T00:00:00.123+02:00"]
            return [null] + stamps.map { Sample(.string($0), "text", .string($0)) }
        case .blob:
            let blobs = [Data(), Data([0]), Data([0, 1, 2, 255]), Data(0...255), Data("é".utf8)]
            return [null] + blobs.map { $0.base64EncodedString() }.map { Sample(.string($0), "blob", .string($0)) }
        case .json:
            let values: [JSONValue] = [
                .object(["b": .array([1, 2.5, "x"]), "a": .object(["nested": true, "none": .null])]), .array([]),
                "text",
                "quote \" and ✓", 0, -7, 1e300, false,
            ]
            return [null] + values.map { Sample($0, "text", $0) }
        }
    }

    @Test(arguments: FieldType.allCases, WritePath.allCases)
    func fieldValuesRoundTrip(type: FieldType, path: WritePath) async throws {
        let entity = EntityType(
            name: "things", primaryKey: PrimaryKey(name: "id", type: .integer),
            fields: [Field(name: "value", type: type, nullable: true)])
        let samples = Self.samples(of: type)
        let rows = samples.enumerated().map { RowValues(key: .int(Int64($0.offset)), values: [$0.element.written]) }
        let expected = samples.enumerated().map { index, sample -> [JSONValue] in
            [.int(Int64(index)), sample.read, .int(Int64(index + 1))]
        }
        try await withDatabase { queue in
            try queue.write { db in try Self.write(rows, of: entity, through: path, to: db) }
            try queue.read { db in
                let storage = try String.fetchAll(db, sql: "SELECT typeof(value) FROM things ORDER BY id")
                #expect(storage == samples.map(\.storage))
                #expect(try Self.readThroughValueMapping(entity, from: db) == expected)
                #expect(try Self.readThroughStatementValues(entity, from: db).rows == expected)
            }
        }
    }

    @Test(arguments: [KeyType.integer, .text], WritePath.allCases)
    func keysRoundTrip(type: KeyType, path: WritePath) async throws {
        let entity = EntityType(
            name: "things", primaryKey: PrimaryKey(name: "id", type: type),
            fields: [Field(name: "value", type: .integer)])
        // In key order: numeric for integers, bytewise for text.
        let keys: [JSONValue] =
            switch type {
            case .integer: [Int64.min, -1, 0, 1, Int64.max].map(JSONValue.int)
            case .text: [" ", "Z", "a", "quote \" \\", "é", "日本語 🎉"].map(JSONValue.string)
            }
        let rows = keys.enumerated().map { RowValues(key: $0.element, values: [.int(Int64($0.offset))]) }
        let expected = keys.enumerated().map { [$0.element, .int(Int64($0.offset)), .int(Int64($0.offset + 1))] }
        try await withDatabase { queue in
            try queue.write { db in try Self.write(rows, of: entity, through: path, to: db) }
            try queue.read { db in
                #expect(try Self.readThroughValueMapping(entity, from: db) == expected)
                let (rows, keysRead) = try Self.readThroughStatementValues(entity, from: db)
                #expect(rows == expected)
                #expect(keysRead == keys)
                let table = TableSQL(type: entity)
                for (index, key) in keys.enumerated() {
                    let row = try Row.fetchOne(db, sql: table.row, arguments: [ValueMapping.databaseValue(key: key)])
                    #expect(row.map { ValueMapping.jsonRow($0, of: entity) } == expected[index])
                }
            }
        }
    }

    /// What validation refuses still maps as documented.
    @Test func unvalidatedValuesMapAsDocumented() {
        func stored(_ value: JSONValue, as type: FieldType) -> String {
            describe(ValueMapping.databaseValue(value, as: type))
        }
        #expect(stored(.bool(true), as: .integer) == "integer 1")
        #expect(stored(.double(2), as: .integer) == "real 2.0")
        #expect(stored(.string("not base64!"), as: .blob) == "blob 0 bytes")
        #expect(stored(.array([1]), as: .text) == "null")
        #expect(stored(.object([:]), as: .integer) == "null")
        #expect(describe(ValueMapping.databaseValue(key: .double(1))) == "null")
        #expect(ValueMapping.jsonKey(2.5.databaseValue) == .null)
        #expect(ValueMapping.jsonKey(Data([1]).databaseValue) == .null)
        #expect(ValueMapping.jsonValue(2.databaseValue, as: nil) == .int(2))
        #expect(ValueMapping.jsonValue((-3).databaseValue, as: .boolean) == .bool(true))
        #expect(ValueMapping.jsonValue(2.5.databaseValue, as: .integer) == .double(2.5))
        #expect(ValueMapping.jsonValue("AA==".databaseValue, as: .blob) == .string("AA=="))
        #expect(ValueMapping.jsonValue(Data([1]).databaseValue, as: .text) == .string("AQ=="))
    }

    private func describe(_ value: DatabaseValue) -> String {
        switch value.storage {
        case .null: "null"
        case .int64(let number): "integer \(number)"
        case .double(let number): "real \(number)"
        case .string(let text): "text \(text)"
        case .blob(let data): "blob \(data.count) bytes"
        }
    }

    private func withDatabase(_ body: (DatabaseQueue) throws -> Void) async throws {
        try await withTemporaryDirectory { directory in
            try body(try DatabaseQueue(path: directory.appendingPathComponent("codec.sqlite").path))
        }
    }

    /// Creates the table of `type` and writes `rows` with revisions 1, 2, ….
    private static func write(
        _ rows: [RowValues], of type: EntityType, through path: WritePath, to db: Database
    ) throws {
        let table = TableSQL(type: type)
        for statement in table.create { try db.execute(sql: statement) }
        for (index, row) in rows.enumerated() {
            let revision = Int64(index + 1)
            let key = ValueMapping.databaseValue(key: row.key)
            switch path {
            case .statementValues:
                try StatementValues.execute(
                    try db.cachedStatement(sql: table.insert), row: row, of: type, revision: revision)
            case .snapshotCells:
                let cells = SnapshotCells([[row.key] + row.values + [.int(revision)]])
                try StatementValues.execute(
                    try db.cachedStatement(sql: table.insert), row: cells.cells(ofRow: 0), of: cells,
                    types: type.fields.map(\.type))
            case .valueMappingInsert:
                let fields = zip(type.fields, row.values).map { ValueMapping.databaseValue($1, as: $0.type) }
                try db.execute(
                    sql: table.insert, arguments: StatementArguments([key] + fields + [revision.databaseValue]))
            case .valueMappingUpdate:
                // A placeholder that satisfies NOT NULL, then the update.
                let placeholders = type.fields.map { ValueMapping.databaseValue(.int(0), as: $0.type) }
                try db.execute(
                    sql: table.insert, arguments: StatementArguments([key] + placeholders + [0.databaseValue]))
                try db.execute(
                    sql: table.update, arguments: ValueMapping.updateArguments(row, of: type, revision: revision))
            }
        }
    }

    private static func selectAll(_ type: EntityType) -> String {
        let table = TableSQL(type: type)
        return "SELECT \(table.columns) FROM \(table.table) ORDER BY \(table.key)"
    }

    private static func readThroughValueMapping(_ type: EntityType, from db: Database) throws -> [[JSONValue]] {
        try Row.fetchAll(db, sql: selectAll(type)).map { ValueMapping.jsonRow($0, of: type) }
    }

    /// The rows as snapshot pages write them (JSON from the C API, parsed back), and the keys as
    /// `StatementValues.key` reads them.
    private static func readThroughStatementValues(
        _ type: EntityType, from db: Database
    ) throws -> (rows: [[JSONValue]], keys: [JSONValue]) {
        let statement = try db.makeStatement(sql: selectAll(type))
        let cursor = try Row.fetchCursor(statement)
        var writer = JSONWriter()
        var keys: [JSONValue] = []
        writer.beginArray()
        while try cursor.next() != nil {
            keys.append(StatementValues.key(column: 0, of: statement))
            StatementValues.writeRow(of: type, from: statement, to: &writer)
        }
        writer.endArray()
        let parsed = try JSONParser.parse(writer.bytes)
        guard case .array(let rows) = parsed else {
            Issue.record("not an array: \(parsed)")
            return ([], keys)
        }
        return (rows.map { if case .array(let values) = $0 { values } else { [$0] } }, keys)
    }
}

extension ValueCodecTests {
    /// A damaged file may hold anything in `revision`: it reads as null, never traps (the seed fuzz
    /// target found a `NULL` revision stopping the process).
    @Test(arguments: ["NULL", "'soon'"])
    func aRevisionThatIsNotAnIntegerReadsAsNull(_ stored: String) throws {
        let type = EntityType(
            name: "notes", primaryKey: .init(name: "id", type: .integer),
            fields: [.init(name: "body", type: .text, nullable: true)])
        let row = try DatabaseQueue().read { db in try Row.fetchOne(db, sql: "SELECT 7, 'x', \(stored)")! }
        #expect(ValueMapping.jsonRow(row, of: type) == [.int(7), .string("x"), .null])
    }
}
