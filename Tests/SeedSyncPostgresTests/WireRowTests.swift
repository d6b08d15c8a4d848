import Foundation
import PostgresNIO
import SeedSyncModel
import SeedSyncPostgres
import SeedSyncTesting
import Testing

/// Snapshot pages read typed columns, the change log `to_json` text: for every accepted column
/// type and the edges of its values, both give the same JSON, byte for byte.
@Suite(.needsPostgres, .tags(.postgres)) struct WireRowTests {
    static let tables = """
        CREATE TYPE mood AS ENUM ('calm', 'busy', 'très occupé');
        CREATE TABLE edges (
          id integer PRIMARY KEY,
          small smallint, big bigint,
          single real, double double precision, decimal numeric, money numeric(12, 4),
          words text, code varchar(10), flag boolean,
          at timestamptz, local timestamp,
          data bytea,
          tag uuid, state mood, padded char(4), doc jsonb, raw json,
          ints integer[], names text[], amounts numeric[], grid bigint[][], flags boolean[], ids uuid[],
          day date, clock time, span interval
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
                    Field(name: "decimal", type: .text, nullable: true),
                    Field(name: "money", type: .real, nullable: true),
                    Field(name: "words", type: .text, nullable: true), Field(name: "code", type: .text, nullable: true),
                    Field(name: "flag", type: .boolean, nullable: true),
                    Field(name: "at", type: .timestamp, nullable: true),
                    Field(name: "local", type: .timestamp, nullable: true),
                    Field(name: "data", type: .blob, nullable: true),
                    Field(name: "tag", type: .text, nullable: true), Field(name: "state", type: .text, nullable: true),
                    Field(name: "padded", type: .text, nullable: true), Field(name: "doc", type: .json, nullable: true),
                    Field(name: "raw", type: .json, nullable: true), Field(name: "ints", type: .json, nullable: true),
                    Field(name: "names", type: .json, nullable: true),
                    Field(name: "amounts", type: .json, nullable: true),
                    Field(name: "grid", type: .json, nullable: true), Field(name: "flags", type: .json, nullable: true),
                    Field(name: "ids", type: .json, nullable: true),
                    Field(name: "day", type: .text, nullable: true), Field(name: "clock", type: .text, nullable: true),
                    Field(name: "span", type: .text, nullable: true),
                ])
        ])

    /// Rows written after attach, so each is in the change log as `to_json` and in the table.
    static let rows = """
        BEGIN;
        INSERT INTO edges VALUES
          (1, 32767, 9223372036854775807, 0.1, 0.1, 12.50, -0.0001, E'quote " backslash \\\\ tab \\t newline \\n ünïcödé 😀', '', true,
           '1969-12-31 23:59:59.999999+00', '2000-01-01 00:00:00', '\\x'),
          (2, -32768, -9223372036854775808, 3.4028235e38, 1e300, 123456789012345678901234567890.123456789, 0, '', 'x', false,
           '0001-01-01 00:00:00+00', '9999-12-31 23:59:59.999999', '\\x00ff10'),
          (3, 0, 0, 1e-7, -2.5e-308, 0.000001, 99999999.9999, 'a', 'b', NULL,
           '2026-11-22 10:15:00.25+00', '1999-12-31 23:59:59.5', decode(repeat('ab01', 700), 'hex')),
          (4, NULL, NULL, 16777217, 12, 100000000000000000000, 300, NULL, NULL, NULL, NULL, NULL, NULL),
          (5, 1, -1, 1.5, 5e-324, -7, 0.5, 'z', 'zz', true, '2000-02-29 12:00:00.000001+00', '1600-03-01 00:00:00', '\\xff'),
          (6, NULL, NULL, -0.000123, -0.0, 0.10, 1, NULL, NULL, NULL, '2038-01-19 03:14:08+00', '1900-01-01 00:00:00.1', NULL);
        UPDATE edges SET tag = 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11', state = 'très occupé', padded = 'ab',
          doc = '{"b": [1, 2.50, "x", null], "a": {"deep": true}, "n": 12345678901234567890}',
          raw = '{"z": 1,   "a": [ ]}', ints = '{1, NULL, -3}', names = '{"a b", "", "é\\"q"}',
          amounts = '{12.50, 123456789012345678901234567890.123456789, -0}', grid = '{{1, 2}, {3, 4}}',
          flags = '{true, false}', ids = '{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}' WHERE id = 1;
        UPDATE edges SET doc = '"just text"', raw = '7', ints = '{}', state = 'calm' WHERE id = 2;
        UPDATE edges SET doc = 'false' WHERE id = 3;
        UPDATE edges SET doc = 'null' WHERE id = 4;
        UPDATE edges SET day = '2026-11-28', clock = '00:00:00', span = '0' WHERE id = 1;
        UPDATE edges SET day = '0001-01-01', clock = '23:59:59.999999', span = '1 year 2 mons 3 days 04:05:06.5' WHERE id = 2;
        UPDATE edges SET day = '9999-12-31', clock = '24:00:00', span = '-1 year -2 mons +3 days -04:05:06' WHERE id = 3;
        UPDATE edges SET day = '2000-02-29', clock = '10:15:00.25', span = '-0.5 seconds' WHERE id = 4;
        UPDATE edges SET day = '1969-12-31', clock = '12:00:00.000001', span = '1 mon -1 day 100000 hours' WHERE id = 5;
        UPDATE edges SET span = '-1 year 11 mons -00:00:00.000001' WHERE id = 6;
        COMMIT
        """

    @Test func snapshotPagesAndTheChangeLogWriteEveryValueAlike() async throws {
        try await withTeamDatabase(Self.tables) { location in
            try await PostgresSyncStore.attach(at: location, schema: Self.schema)
            try await psql(Self.rows, on: location)
            try await TestPostgres.withStore(at: location) { store in
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
                // A numeric without a declared precision, as text: every digit.
                #expect(page.rows[1][5] == "123456789012345678901234567890.123456789" && page.rows[0][5] == "12.50")
                #expect(page.rows[1][12] == "AP8Q" && page.rows[0][12] == "")
                // uuid, an enum, char(n), jsonb, json and arrays.
                let first = page.rows[0]
                #expect(first[13] == "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11" && first[14] == "très occupé")
                #expect(first[15] == "ab  ")
                #expect(json(first[16]) == #"{"a":{"deep":true},"b":[1,2.5,"x",null],"n":1.2345678901234567e+19}"#)
                #expect(json(first[17]) == #"{"a":[],"z":1}"#)
                #expect(json(first[18]) == "[1,null,-3]" && json(first[19]) == #"["a b","","é\"q"]"#)
                #expect(json(first[21]) == "[[1,2],[3,4]]" && json(first[22]) == "[true,false]")
                #expect(json(first[23]) == #"["a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"]"#)
                #expect(page.rows[1][16] == "just text" && page.rows[1][17] == 7 && page.rows[1][18] == .array([]))
                #expect(page.rows[2][16] == false && page.rows[3][16] == .null, "JSON null is the field's null")
                // date, time and interval as text: ISO 8601, intervals as IntervalStyle iso_8601 writes them.
                #expect(
                    page.rows.map { $0[24] } == [
                        "2026-11-28", "0001-01-01", "9999-12-31", "2000-02-29", "1969-12-31", .null,
                    ])
                #expect(
                    page.rows[1][25] == "23:59:59.999999" && page.rows[2][25] == "24:00:00"
                        && page.rows[3][25] == "10:15:00.25")
                #expect(
                    page.rows.map { $0[26] } == [
                        "PT0S", "P1Y2M3DT4H5M6.5S", "P-1Y-2M3DT-4H-5M-6S", "PT-0.5S", "P1M-1DT100000H",
                        "P-1MT-0.000001S",
                    ])
            }
        }
    }

    /// A capture function made before `IntervalStyle` joined the pinned settings gets it when a
    /// store opens: an interval a psql session writes (in its own style, `postgres`) is logged as
    /// the page serves it.
    @Test func captureFunctionsMadeBeforeASettingGetItWhenAStoreOpens() async throws {
        try await withTeamDatabase(Self.tables) { location in
            try await PostgresSyncStore.attach(at: location, schema: Self.schema)
            try await psql(#"ALTER FUNCTION seedsync."_log_edges"() RESET "IntervalStyle""#, on: location)
            try await TestPostgres.withStore(at: location) { store in
                try await psql("INSERT INTO edges (id, span) VALUES (1, '1 day 02:00:00')", on: location)
                let logged = try await changeSets(of: store, after: 1).first?["edges"]?.attributes["1"]?["span"]
                let page = try await store.snapshotPage(of: "edges", after: nil, limit: 10)
                #expect(logged == "P1DT2H" && page.rows[0][26] == "P1DT2H")
            }
        }
    }

    @Test(arguments: [
        ("UPDATE edges SET double = 'NaN'", "double"),
        ("UPDATE edges SET single = '-Infinity'", "single"),
        ("UPDATE edges SET money = 'NaN'", "money"),
        ("UPDATE edges SET at = 'infinity'", "at"),
        ("UPDATE edges SET local = '0044-03-15 BC'", "local"),
    ])
    func valuesJSONCannotCarryAreReportedOnBothPaths(update: String, field: String) async throws {
        try await withTeamDatabase(Self.tables) { location in
            try await PostgresSyncStore.attach(at: location, schema: Self.schema)
            try await psql("INSERT INTO edges (id) VALUES (1); \(update)", on: location)
            try await TestPostgres.withStore(at: location) { store in
                await #expect { try await store.snapshotPage(of: "edges", after: nil, limit: 10) } throws: {
                    ($0 as? SyncStoreError)?.code == .schemaMismatch && "\($0)".contains("edges[1].\(field)")
                }
                await #expect { try await store.changeFeed(after: 2, limit: 10, byteBudget: 1 << 20) } throws: {
                    ($0 as? SyncStoreError)?.code == .schemaMismatch && "\($0)".contains("edges[1].\(field)")
                }
            }
        }
    }

    /// A real field over a numeric column without a declared precision: a value a double cannot
    /// hold is refused on both paths, naming the row and column, never served rounded.
    @Test func aDecimalARealWouldRoundIsRefusedNotRounded() async throws {
        var changed = Self.schema
        changed.types[0].fields[4].type = .real
        let schema = changed
        try await withTeamDatabase(Self.tables) { location in
            try await PostgresSyncStore.attach(at: location, schema: schema)
            try await psql("INSERT INTO edges (id, decimal) VALUES (1, 12.50), (2, 0.1)", on: location)
            try await TestPostgres.withStore(at: location) { store in
                let page = try await store.snapshotPage(of: "edges", after: nil, limit: 10)
                #expect(page.rows.map { $0[5] } == [12.5, 0.1])
                try await psql("UPDATE edges SET decimal = 123456789012345678.5 WHERE id = 2", on: location)
                await #expect { try await store.snapshotPage(of: "edges", after: nil, limit: 10) } throws: {
                    ($0 as? SyncStoreError)?.code == .schemaMismatch && "\($0)".contains("edges[2].decimal")
                }
                await #expect { try await store.changeFeed(after: 2, limit: 10, byteBudget: 1 << 20) } throws: {
                    ($0 as? SyncStoreError)?.code == .schemaMismatch && "\($0)".contains("edges[2].decimal")
                        && "\($0)".contains("rounded")
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
