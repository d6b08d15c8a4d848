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

    /// Found by `scripts/fuzz.sh` (target `wire`): a change set that names an id or a type twice,
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
