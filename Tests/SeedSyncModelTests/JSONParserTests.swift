import Foundation
import SeedSyncModel
import SeedSyncTesting
import Testing

@Suite struct JSONParserTests {
    private func parse(_ text: String) throws -> JSONValue {
        try JSONParser.parse(Array(text.utf8))
    }

    @Test func parsesEveryKindOfValue() throws {
        let value = try parse(
            #" {"a": [1, -2, 0, 1.5, -0.25e2, 1E3, true, false, null], "b": {"c": "d"}, "e": [], "f": {}} "#)
        #expect(
            value
                == .object([
                    "a": .array([1, -2, 0, 1.5, -25.0, 1000.0, true, false, .null]),
                    "b": .object(["c": "d"]),
                    "e": .array([]),
                    "f": .object([:]),
                ]))
    }

    @Test func decodesEscapesAndUnicode() throws {
        #expect(try parse(#""a\"b\\c\/d\b\f\n\r\t""#) == .string("a\"b\\c/d\u{8}\u{c}\n\r\t"))
        #expect(try parse(#""\u00e9\u4e2d\ud83d\ude00""#) == .string("é中😀"))
        #expect(try parse("\"é中😀\"") == .string("é中😀"))
    }

    @Test func keepsIntegersAndRealsApart() throws {
        #expect(try parse("9223372036854775807") == .int(.max))
        #expect(try parse("-9223372036854775808") == .int(.min))
        // Past Int64, a number is a real, as JSONDecoder would read it.
        #expect(try parse("9223372036854775808") == .double(9_223_372_036_854_775_808))
        #expect(try parse("-0") == .int(0))
    }

    @Test(arguments: [
        ("", "unexpected end of text"),
        ("[1,]", "unexpected character"),
        ("[1 2]", "expected ',' or ']'"),
        ("{\"a\" 1}", "expected ':'"),
        ("{\"a\": 1,}", "expected a member name"),
        ("{\"a\": 1, \"a\": 2}", "duplicate member 'a'"),
        ("01", "invalid number (leading zero)"),
        ("1.", "invalid number"),
        ("1e", "invalid number"),
        ("-", "invalid number"),
        ("1e999", "number out of range"),
        ("tru", "unexpected character"),
        ("\"abc", "unterminated string"),
        ("\"a\u{1}\"", "control character in a string"),
        (#""\x""#, "invalid escape"),
        (#""\ud800""#, "lone high surrogate"),
        (#""\udc00""#, "lone low surrogate"),
        ("1 2", "unexpected text after the value"),
        ("// comment\n1", "unexpected character"),
    ])
    func refusesWhatIsNotJSON(text: String, reason: String) throws {
        #expect { try parse(text) } throws: {
            ($0 as? JSONParseError)?.reason == reason && ($0 as? JSONParseError)?.code == .invalidSyntax
        }
    }

    @Test func refusesInvalidUTF8() {
        let bytes: [UInt8] = [UInt8(ascii: "\""), 0xC3, 0x28, UInt8(ascii: "\"")]
        #expect { try JSONParser.parse(bytes) } throws: { error in
            let error = error as? JSONParseError
            return error?.offset == 1 && error?.reason == "a string is not valid UTF-8"
        }
    }

    @Test func limitsNesting() throws {
        let deep =
            String(repeating: "[", count: JSONParser.maxDepth) + String(repeating: "]", count: JSONParser.maxDepth)
        #expect(try parse(deep) != .null)
        let deeper = "[" + deep + "]"
        #expect { try parse(deeper) } throws: { ($0 as? JSONParseError)?.code == .tooDeep }
    }

    /// The parser and `JSONDecoder` read the same documents the same way.
    @Test func agreesWithJSONDecoder() throws {
        let documents = [
            CaseStudyDocuments.singleChangeSet,
            CaseStudyDocuments.serverResponse,
            #"{"type":"events","revision":3,"columns":["id","title","revision"],"rows":[[1,"Gig",2],[2,"Talk\u00e9",3]],"next":null}"#,
            #"[0.1, 1e-7, 123456789.125, -3.5e300, "x", {"k": [null]}]"#,
        ]
        for document in documents {
            let decoded = try JSONDecoder().decode(JSONValue.self, from: Data(document.utf8))
            #expect(try parse(document) == decoded)
        }
    }

    @Test func messagesNameWhereTheyAreWrong() throws {
        let page = try parse(#"{"type":"events","revision":"3","columns":[],"rows":[],"next":null}"#)
        #expect(throws: JSONShapeError(.wrongType, "revision", "expected an integer")) { try SnapshotPage(json: page) }
        let feed = try parse(
            #"{"maxRevision":2,"hasMore":false,"changeSets":[{"revision":1,"types":["a"],"a":{}},{"revision":2,"types":"a"}]}"#
        )
        #expect(throws: JSONShapeError(.wrongType, "changeSets[1].types", "expected an array")) {
            try SyncResponse(json: feed)
        }
    }
}
