import Foundation
import PostgresNIO
import SeedSyncModel
import SeedSyncTesting
import Testing

@testable import SeedSyncPostgres

/// Snapshot pages read typed columns, the change log `to_json` text: for every accepted column
/// type and the edges of its values, both give the same JSON, byte for byte.
@Suite struct WireRowTests {
    static let tables = """
        CREATE TABLE edges (
          id integer PRIMARY KEY,
          small smallint, big bigint,
          single real, double double precision, decimal numeric, money numeric(12, 4),
          words text, code varchar(10), flag boolean,
          at timestamptz, local timestamp,
          data bytea
        )
        """

    static let schema = DatasetSchema(
        dataset: "edges", schemaVersion: 1,
        types: [
            EntityType(
                name: "edges", primaryKey: PrimaryKey(name: "id", type: .integer),
                fields: [
                    Field(name: "small", type: .integer, nullable: true),
                    Field(name: "big", type: .integer, nullable: true),
                    Field(name: "single", type: .real, nullable: true),
                    Field(name: "double", type: .real, nullable: true),
                    Field(name: "decimal", type: .real, nullable: true),
                    Field(name: "money", type: .real, nullable: true),
                    Field(name: "words", type: .text, nullable: true), Field(name: "code", type: .text, nullable: true),
                    Field(name: "flag", type: .boolean, nullable: true),
                    Field(name: "at", type: .timestamp, nullable: true),
                    Field(name: "local", type: .timestamp, nullable: true),
                    Field(name: "data", type: .blob, nullable: true),
                ])
        ])

    /// Rows written after attach, so each is in the change log as `to_json` and in the table.
    static let rows = """
        INSERT INTO edges VALUES
          (1, 32767, 9223372036854775807, 0.1, 0.1, 12.50, -0.0001, E'quote " backslash \\\\ tab \\t newline \\n ünïcödé 😀', '', true,
           '1969-12-31 23:59:59.999999+00', '2000-01-01 00:00:00', '\\x'),
          (2, -32768, -9223372036854775808, 3.4028235e38, 1e300, 123456789012345678901234567890.123456789, 0, '', 'x', false,
           '0001-01-01 00:00:00+00', '9999-12-31 23:59:59.999999', '\\x00ff10'),
          (3, 0, 0, 1e-7, -2.5e-308, 0.000001, 99999999.9999, 'a', 'b', NULL,
           '2026-11-22 10:15:00.25+00', '1999-12-31 23:59:59.5', decode(repeat('ab01', 700), 'hex')),
          (4, NULL, NULL, 16777217, 12, 100000000000000000000, 300, NULL, NULL, NULL, NULL, NULL, NULL),
          (5, 1, -1, 1.5, 5e-324, -7, 0.5, 'z', 'zz', true, '2000-02-29 12:00:00.000001+00', '1600-03-01 00:00:00', '\\xff'),
          (6, NULL, NULL, -0.000123, -0.0, 0.10, 1, NULL, NULL, NULL, '2038-01-19 03:14:08+00', '1900-01-01 00:00:00.1', NULL)
        """

    @Test func snapshotPagesAndTheChangeLogWriteEveryValueAlike() async throws {
        try await withTeamDatabase(Self.tables) { location in
            try await PostgresSyncStore.attach(at: location, schema: Self.schema)
            try await psql(Self.rows, on: location)
            try await PostgresSyncStore.withStore(at: location) { store in
                let page = try await store.snapshotPage(of: "edges", after: nil, limit: 100)
                let logged = try #require(try await changeSets(of: store, after: 1).first?["edges"])
                #expect(page.rows.count == 6)
                for row in page.rows {
                    let key = try #require(row[0].keyString)
                    let attributes = try #require(logged.attributes[key])
                    for (index, field) in Self.schema.types[0].fields.enumerated() {
                        let fromPage = json(row[index + 1])
                        let fromLog = json(attributes[field.name] ?? .null)
                        #expect(fromPage == fromLog, "edges[\(key)].\(field.name): page \(fromPage), log \(fromLog)")
                    }
                }
                // The values themselves, as a client gets them.
                #expect(json(page.rows[0][7]) == #""quote \" backslash \\ tab \t newline \n ünïcödé 😀""#)
                #expect(page.rows[0][10] == "1969-12-31T23:59:59.999999Z" && page.rows[0][11] == "2000-01-01T00:00:00Z")
                #expect(page.rows[1][10] == "0001-01-01T00:00:00Z" && page.rows[1][11] == "9999-12-31T23:59:59.999999Z")
                #expect(page.rows[2][10] == "2026-11-22T10:15:00.25Z" && page.rows[2][11] == "1999-12-31T23:59:59.5Z")
                #expect(page.rows[4][10] == "2000-02-29T12:00:00.000001Z" && page.rows[4][11] == "1600-03-01T00:00:00Z")
                #expect(page.rows[0][3] == .double(0.1) && page.rows[3][3] == .double(16_777_216))
                #expect(page.rows[1][5] == .double(123456789012345678901234567890.123456789))
                #expect(page.rows[1][12] == "AP8Q" && page.rows[0][12] == "")
            }
        }
    }

    @Test(arguments: [
        ("UPDATE edges SET double = 'NaN'", "double"),
        ("UPDATE edges SET single = '-Infinity'", "single"),
        ("UPDATE edges SET decimal = 'NaN'", "decimal"),
        ("UPDATE edges SET at = 'infinity'", "at"),
        ("UPDATE edges SET local = '0044-03-15 BC'", "local"),
    ])
    func valuesJSONCannotCarryAreReportedOnBothPaths(update: String, field: String) async throws {
        try await withTeamDatabase(Self.tables) { location in
            try await PostgresSyncStore.attach(at: location, schema: Self.schema)
            try await psql("INSERT INTO edges (id) VALUES (1); \(update)", on: location)
            try await PostgresSyncStore.withStore(at: location) { store in
                await #expect { try await store.snapshotPage(of: "edges", after: nil, limit: 10) } throws: {
                    ($0 as? SyncStoreError)?.code == .schemaMismatch && "\($0)".contains("edges[1].\(field)")
                }
                await #expect { try await store.changeFeed(after: 2, limit: 10, byteBudget: 1 << 20) } throws: {
                    ($0 as? SyncStoreError)?.code == .schemaMismatch && "\($0)".contains("edges[1].\(field)")
                }
            }
        }
    }

    private func json(_ value: JSONValue) -> String {
        var writer = JSONWriter()
        writer.value(value)
        return String(decoding: writer.bytes, as: UTF8.self)
    }
}
