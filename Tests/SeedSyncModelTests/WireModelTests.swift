import Foundation
import SeedSyncModel
import SeedSyncTesting
import Testing

@Suite struct WireModelTests {
    @Test func caseStudyChangeSetDecodesAndRoundTrips() throws {
        let changeSet = try JSONDecoder().decode(ChangeSet.self, from: Data(CaseStudyDocuments.singleChangeSet.utf8))
        #expect(changeSet.types == ["users"])
        #expect(changeSet.revision == nil)
        let users = try #require(changeSet["users"])
        #expect(users.update == [1013])
        #expect(users.attributes["1013"]?["first_name"] == "Florian")
        #expect(users.attributes["1013"]?["revision"] == 355)
        #expect(try JSONDecoder().decode(ChangeSet.self, from: Data(changeSet.jsonBytes())) == changeSet)
        #expect(try JSONDecoder().decode(ChangeSet.self, from: JSONEncoder().encode(changeSet)) == changeSet)
    }

    @Test func caseStudyRequestDecodesWithNegativeTemporaryIDsOnceItHasAnID() throws {
        // The case study's change sets have no id; a push must carry one (its idempotency key).
        #expect { try SyncRequest(json: JSONParser.parse(Array(CaseStudyDocuments.clientRequest.utf8))) } throws: {
            ($0 as? JSONShapeError)?.path == "changeSets[0].id"
        }
        let withID = CaseStudyDocuments.clientRequest.replacingOccurrences(
            of: #""types": [ "screen_instances""#, with: #""id": "c-1", "types": [ "screen_instances""#)
        let request = try JSONDecoder().decode(SyncRequest.self, from: Data(withID.utf8))
        #expect(request.maxRevision == 1000)
        #expect(request.limit == nil)
        let pushed = try #require(request.changeSets.first)
        #expect(pushed.id == "c-1")
        #expect(pushed.changeSet.types == ["screen_instances", "screen_instance_items"])
        #expect(pushed.changeSet["screen_instance_items"]?.create == [-11, -12])
        #expect(pushed.changeSet["screen_instance_items"]?.attributes["-11"]?["screen_instance_id"] == -10)
        #expect(try JSONDecoder().decode(SyncRequest.self, from: JSONEncoder().encode(request)) == request)
    }

    @Test func aLiveSyncRequestCarriesItsWait() throws {
        let request = SyncRequest(maxRevision: 7, limit: 10, wait: 55)
        #expect(String(decoding: request.jsonBytes(), as: UTF8.self) == #"{"maxRevision":7,"limit":10,"wait":55}"#)
        #expect(try SyncRequest(json: JSONParser.parse(request.jsonBytes())) == request)
        #expect(try SyncRequest(json: JSONParser.parse(Array(#"{"maxRevision": 7}"#.utf8))).wait == nil)
        #expect(throws: JSONShapeError.self) {
            try SyncRequest(json: JSONParser.parse(Array(#"{"maxRevision": 7, "wait": 1.5}"#.utf8)))
        }
        #expect(throws: JSONShapeError.self) {
            try SyncRequest(json: JSONParser.parse(Array(#"{"maxRevision": 7, "wait": null}"#.utf8)))
        }
    }

    @Test func pushIDsAndResultsReadAndWriteTheirWireForm() throws {
        for bad in ["", String(repeating: "a", count: 65), "has space", "é"] {
            #expect(!PushedChangeSet.isValidID(bad), "\(bad)")
        }
        #expect(PushedChangeSet.isValidID("Az09_-") && PushedChangeSet.isValidID(String(repeating: "a", count: 64)))
        let results = [
            PushResult(id: "a", status: .applied(revision: 9, keys: ["events": ["-2": 31]])),
            PushResult(
                id: "b",
                status: .conflict(ChangeSet(changes: [TypeChanges(type: "events", delete: [5])], conflict: true))),
            PushResult(id: "c", status: .rejected(code: "invalid_change_set", message: "events[-1].title is missing")),
        ]
        for result in results {
            #expect(try PushResult(json: JSONParser.parse(result.jsonBytes())) == result)
        }
        #expect(
            String(decoding: results[0].jsonBytes(), as: UTF8.self)
                == #"{"id":"a","status":"applied","revision":9,"keys":{"events":{"-2":31}}}"#)
        #expect(
            String(decoding: results[1].jsonBytes(), as: UTF8.self)
                == #"{"id":"b","status":"conflict","changeSet":{"conflict":true,"types":["events"],"events":{"create":[],"update":[],"delete":[5],"attributes":{}}}}"#
        )
    }

    @Test func caseStudyResponseDecodesIgnoringConflictFlag() throws {
        let response = try JSONDecoder().decode(SyncResponse.self, from: Data(CaseStudyDocuments.serverResponse.utf8))
        #expect(response.maxRevision == 1001)
        #expect(response.hasMore == false)
        let changeSet = try #require(response.changeSets.first)
        #expect(changeSet.revision == 1001)
        #expect(changeSet["screen_instances"]?.attributes["321"]?["__oldId__"] == -10)
        #expect(try JSONDecoder().decode(SyncResponse.self, from: JSONEncoder().encode(response)) == response)
    }

    @Test func changeSetBytesHaveAStableMemberOrder() throws {
        let changeSet = ChangeSet(
            revision: 7,
            changes: [
                TypeChanges(
                    type: "books", create: [2], update: [1], delete: [3],
                    attributes: ["1": ["title": "B", "price": 1.5], "2": ["title": "A", "price": 2]])
            ])
        let text = String(decoding: changeSet.jsonBytes(), as: UTF8.self)
        #expect(
            text
                == #"{"revision":7,"types":["books"],"books":{"create":[2],"update":[1],"delete":[3],"attributes":{"2":{"price":2,"title":"A"},"1":{"price":1.5,"title":"B"}}}}"#
        )
    }

    /// Found by `scripts/suites/fuzz.sh` (target `wire`): a change set that names an id or a type twice,
    /// which validation refuses, was written with a member twice, which no strict reader accepts.
    @Test func aChangeSetNamingAnIdOrATypeTwiceIsWrittenAsValidJSON() throws {
        let events = TypeChanges(
            type: "events", create: [31, 33, 33], attributes: ["31": ["title": "a"], "33": ["title": "b"]])
        let written = ChangeSet(changes: [events, events]).jsonBytes()
        let read = try ChangeSet(json: JSONParser.parse(written))
        #expect(read.types == ["events"])
        #expect(read["events"]?.attributes == events.attributes)
        #expect(read.jsonBytes() == written)
    }

    @Test func snapshotPageRoundTrips() throws {
        let page = SnapshotPage(
            type: "events", revision: 9, columns: ["id", "title", "revision"],
            rows: [[1, "Gig \"live\"\n", 3], [2, .null, 9]], next: 2
        )
        #expect(try JSONDecoder().decode(SnapshotPage.self, from: Data(page.jsonBytes())) == page)
        let last = SnapshotPage(type: "events", revision: 9, columns: ["id", "revision"], rows: [], next: .null)
        #expect(
            String(decoding: last.jsonBytes(), as: UTF8.self)
                == #"{"type":"events","revision":9,"columns":["id","revision"],"rows":[],"next":null}"#)
    }

    @Test(arguments: [
        "plain", "quote \" and backslash \\", "line\nbreak\ttab\r", "control \u{01}\u{1F}", "unicode é 🎟", "",
    ])
    func jsonWriterEscapesStrings(text: String) throws {
        var writer = JSONWriter()
        writer.value(.array([.string(text)]))
        #expect(try JSONDecoder().decode([String].self, from: Data(writer.bytes)) == [text])
    }

    /// Every byte that must be escaped, and some that must not, at every position of strings up to
    /// 20 bytes long: the writer scans eight bytes at a time, so a byte must be seen wherever it
    /// falls in a word or in the tail.
    @Test func jsonWriterEscapesEveryByteAtEveryPosition() {
        let escapes: [UInt8: String] = [0x22: #"\""#, 0x5C: #"\\"#, 0x0A: #"\n"#, 0x0D: #"\r"#, 0x09: #"\t"#]
        let special: [UInt8] = (0x00...0x1F).map(UInt8.init) + [0x22, 0x5C]
        for byte in special + [0x20, 0x21, 0x23, 0x5B, 0x5D, 0x7F, 0x80, 0xA2, 0xDC, 0xFF] {
            let escaped =
                escapes[byte] ?? (byte < 0x20 ? String(format: "\\u%04x", Int(byte)) : String(UnicodeScalar(byte)))
            for length in 1...20 {
                for position in 0..<length {
                    var text = [UInt8](repeating: UInt8(ascii: "a"), count: length)
                    text[position] = byte
                    var writer = JSONWriter()
                    text.withUnsafeBufferPointer { writer.string(utf8: $0) }
                    var expected = Array("\"".utf8) + Array(repeating: UInt8(ascii: "a"), count: position)
                    expected += byte >= 0x80 ? [byte] : Array(escaped.utf8)
                    expected += Array(repeating: UInt8(ascii: "a"), count: length - position - 1) + Array("\"".utf8)
                    #expect(writer.bytes == expected, "byte \(byte) at \(position) of \(length)")
                }
            }
        }
    }

    /// Random strings over bytes near every boundary the scan tests (control, quote, backslash,
    /// high bytes) against an escaper written byte by byte.
    @Test func jsonWriterEscapesAsAByteByByteEscaperDoes() {
        let alphabet: [UInt8] =
            [0x00, 0x01, 0x09, 0x0A, 0x1F, 0x20, 0x21, 0x22, 0x23, 0x5B, 0x5C, 0x5D, 0x61, 0x7F, 0x80]
            + [0x9F, 0xA0, 0xDC, 0xE2, 0xFE, 0xFF]
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(bound))
        }
        for _ in 0..<5000 {
            // Mostly plain text, so that words without an escape are common.
            let text = (0..<next(41)).map { _ in next(4) == 0 ? alphabet[next(alphabet.count)] : UInt8(ascii: "x") }
            var writer = JSONWriter()
            text.withUnsafeBufferPointer { writer.string(utf8: $0) }
            var expected: [UInt8] = [0x22]
            for byte in text {
                switch byte {
                case 0x22, 0x5C: expected += [0x5C, byte]
                case 0x0A: expected += Array(#"\n"#.utf8)
                case 0x0D: expected += Array(#"\r"#.utf8)
                case 0x09: expected += Array(#"\t"#.utf8)
                case 0..<0x20: expected += Array(String(format: "\\u%04x", Int(byte)).utf8)
                default: expected.append(byte)
                }
            }
            expected.append(0x22)
            #expect(writer.bytes == expected, "\(text)")
        }
    }

    @Test func jsonValueKeepsIntegersAndRealsApart() throws {
        let values = try JSONDecoder().decode(
            [JSONValue].self, from: Data(#"[1, 1.5, true, null, "x", [1], {"a": 2}, -9223372036854775808]"#.utf8))
        #expect(
            values == [
                .int(1), .double(1.5), .bool(true), .null, .string("x"), .array([1]), .object(["a": 2]), .int(.min),
            ])
    }

    @Test func schemaInfoMatchesTheProtocolShape() throws {
        let info = SchemaInfo(schema: Fixtures.catalogSchema, revision: 12, minRevision: 4)
        let object = try #require(
            JSONSerialization.jsonObject(with: JSONEncoder.stable().encode(info)) as? [String: Any])
        #expect(object["dataset"] as? String == "catalog")
        #expect(object["schemaVersion"] as? Int == 3)
        #expect(object["revision"] as? Int == 12)
        #expect(object["minRevision"] as? Int == 4)
        let books = try #require((object["types"] as? [[String: Any]])?.last)
        #expect((books["primaryKey"] as? [String: String]) == ["name": "id", "type": "integer"])
        let author = try #require((books["fields"] as? [[String: Any]])?[1])
        #expect(author["references"] as? String == "authors")
        #expect(author["nullable"] as? Bool == true)
        #expect(try JSONDecoder().decode(SchemaInfo.self, from: JSONEncoder().encode(info)) == info)
    }

    @Test func errorBodyCarriesCodeMessageAndMinRevision() throws {
        let body = ErrorResponse(error: .init(code: "history_expired", message: "too old", minRevision: 40))
        let text = String(decoding: try JSONEncoder.stable().encode(body), as: UTF8.self)
        #expect(text == #"{"error":{"code":"history_expired","message":"too old","minRevision":40}}"#)
    }
}

/// The revision a server reads from the first bytes of a page's JSON.
@Suite struct PageRevisionTests {
    @Test func theRevisionOfAWrittenPage() throws {
        for type in ["events", #"odd"name\"#, "ünï"] {
            let page = SnapshotPage(type: type, revision: 9_007_199_254_740_993, columns: ["id"], rows: [], next: .null)
            #expect(SnapshotPage.revision(ofJSON: page.jsonBytes()) == 9_007_199_254_740_993, "\(type)")
        }
    }

    @Test func otherJSONHasNone() {
        for json in [
            "", "{", #"{"type":"events""#, #"{"type":"events","revision":"#, #"{"type":"events","revision":12"#,
            #"{"type":"events","revision":-1,"#, #"{"revision":1,"type":"events","#,
            #"{"type":"events","revision":99999999999999999999,"#, #"{"type":"e","columns":[],"revision":1,"#,
        ] {
            #expect(SnapshotPage.revision(ofJSON: Array(json.utf8)) == nil, "\(json)")
        }
    }
}
