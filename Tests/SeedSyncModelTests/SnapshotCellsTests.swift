import Foundation
import SeedSyncModel
import Testing

/// Snapshot pages read as cells (`FlatSnapshotPage`, what builds and migrations load) against the
/// same pages read as values (`JSONParser` and `SnapshotPage`): the same pages, the same errors,
/// the same values taken and refused.
@Suite struct SnapshotCellsTests {
    static let pages = [
        #"{"type":"events","revision":3,"columns":["id","title","revision"],"rows":[[1,"Gig",2],[2,"Talk",3]],"next":null}"#,
        #" { "next" : 7 , "rows" : [ [ 7 , "a\"b\\c\/d\n\u00e9\ud83d\ude00" , 0 ] ] , "columns" : [ ] , "revision" : 0 , "type" : "x" } "#,
        #"{"type":"t","revision":1,"columns":[],"rows":[],"next":null}"#,
        #"{"type":"t","revision":1,"columns":[],"rows":[[],[1],[1,2,3,4]],"next":null}"#,
        #"{"type":"t","revision":1,"columns":[],"rows":[["é中😀", "", -0, 1.5, -2.5e-3, 9223372036854775808, true, false, null]],"next":"k"}"#,
        #"{"type":"t","revision":1,"columns":[],"rows":[[{"b":[1,{"c":null}],"a":"x"}, [], {}, [[[]]]]],"next":null}"#,
        #"{"type":"t","revision":1,"columns":[],"rows":[[1,"x",2]],"next":null,"extra":{"rows":[5]}}"#,
    ]

    @Test(arguments: pages)
    func aPageReadAsCellsIsThePageReadAsValues(_ text: String) throws {
        let values = try SnapshotPage(json: JSONParser.parse(Array(text.utf8)))
        let cells = try FlatSnapshotPage(json: Array(text.utf8))
        #expect(SnapshotPage(cells) == values)
        #expect(cells.rows.count == values.rows.count)
        #expect(FlatSnapshotPage(values) == cells)
    }

    static let notPages: [[UInt8]] =
        [
            #"{"type":"t","revision":1,"columns":[],"rows":[[1],5],"next":null}"#,
            #"{"type":"t","revision":1,"columns":[],"rows":{"a":[1]},"next":null}"#,
            #"{"type":"t","revision":1,"columns":[],"rows":null,"next":null}"#,
            #"{"type":"t","revision":1,"columns":[],"next":null}"#,
            #"{"type":"t","revision":1,"columns":[],"rows":[],"rows":[],"next":null}"#,
            #"{"type":"t","revision":1,"columns":[],"rows":[[1,]],"next":null}"#,
            #"{"type":"t","revision":1,"columns":[],"rows":[[1,"\x"]],"next":null}"#,
            #"{"type":"t","revision":1,"columns":[],"rows":[[1,"\ud800"]],"next":null}"#,
            #"{"type":"t","revision":1,"columns":[],"rows":[[01]],"next":null}"#,
            #"{"type":"t","revision":1,"columns":[],"rows":[[1]]"#,
            #"{"type":"t","revision":"1","columns":[],"rows":[],"next":null}"#,
            #"[{"rows":[[1]]}]"#,
            "{\"type\":\"t\",\"revision\":1,\"columns\":[],\"rows\":[[\"a\u{1}\"]],\"next\":null}",
            "{\"type\":\"t\",\"revision\":1,\"columns\":[],\"rows\":" + String(repeating: "[", count: 70)
                + String(repeating: "]", count: 70) + ",\"next\":null}",
        ].map { Array($0.utf8) } + [
            // A string that is not UTF-8, with and without an escape before it.
            Array(#"{"type":"t","revision":1,"columns":[],"rows":[[""#.utf8) + [0xC3, 0x28]
                + Array(#""]],"next":null}"#.utf8),
            Array(#"{"type":"t","revision":1,"columns":[],"rows":[["\n"#.utf8) + [0xED, 0xA0, 0x80]
                + Array(#""]],"next":null}"#.utf8),
        ]

    @Test(arguments: notPages)
    func whatIsNotAPageFailsAlike(_ bytes: [UInt8]) {
        let asValues = Result { try SnapshotPage(json: JSONParser.parse(bytes)) }
        let asCells = Result { try FlatSnapshotPage(json: bytes) }
        guard case .failure(let valuesError) = asValues, case .failure(let cellsError) = asCells else {
            Issue.record("taken: \(String(decoding: bytes, as: UTF8.self))")
            return
        }
        #expect("\(cellsError)" == "\(valuesError)")
        #expect("\(type(of: cellsError))" == "\(type(of: valuesError))")
    }

    static let candidates: [JSONValue] = [
        .null, true, false, 0, -1, 1.5, .double(.infinity), "", "x", "2026-11-27T10:15:00Z",
        "2026-11-27T10:15:00.250+01:00", "2026-13-27T10:15:00Z", "AA==", "AA", "not base64!",
        .array([1]), .object(["a": 1]), .array([.double(.nan)]), .string(String(repeating: "k", count: 1024)),
        .string(String(repeating: "k", count: 1025)),
    ]

    /// `fits` takes exactly what the checks of a snapshot row take, for every field type and
    /// every kind of value, nullable or not.
    @Test(arguments: FieldType.allCases, [true, false])
    func cellsFitWhatValidationTakes(type: FieldType, nullable: Bool) {
        let entity = EntityType(
            name: "t", primaryKey: PrimaryKey(name: "id", type: .integer),
            fields: [Field(name: "value", type: type, nullable: nullable)])
        for value in Self.candidates {
            let cells = SnapshotCells([[value]])
            let taken = (try? entity.validateSnapshotRow([1, value, 0])) != nil
            #expect(cells.fits(cells[0], type, nullable: nullable) == taken, "\(value)")
        }
    }

    @Test(arguments: [KeyType.integer, .text])
    func keysFitWhatValidationTakes(type: KeyType) {
        for value in Self.candidates {
            let cells = SnapshotCells([[value]])
            #expect(cells.fits(cells[0], key: type) == type.accepts(value), "\(value)")
        }
    }

    /// Cells order keys as `JSONValue.keyPrecedes` orders their values, for every pair.
    @Test func keysSortAsTheirValuesDo() {
        let keys: [JSONValue] = [-2, 3, .int(.min), .int(.max), "B", "a", "é", "éa", "", "a\u{0}", 1.5, .null]
        let cells = SnapshotCells([keys])
        for (i, first) in keys.enumerated() {
            for (j, second) in keys.enumerated() {
                #expect(
                    cells.precedes(cells[i], cells[j]) == JSONValue.keyPrecedes(first, second), "\(first) \(second)")
            }
        }
    }
}
