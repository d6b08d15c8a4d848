import SeedSyncModel
import SeedSyncServer
import SeedSyncStore
import Testing

/// The `__oldId__` marks of a sync answer: made from the push results once, never dropped.
@Suite struct OldIDMarksTests {
    let logged = EncodedChangeSet(
        revision: 7,
        json: Array(
            #"{"revision":7,"types":["locations"],"locations":{"create":[311],"attributes":{"311":{"name":"Hall","revision":7}}}}"#
                .utf8))

    @Test func rowsCreatedWithATemporaryKeyCarryIt() throws {
        let marks = try OldIDMarks([
            PushResult(id: "a", status: .applied(revision: 7, keys: ["locations": ["-1": 311]])),
            PushResult(id: "b", status: .applied(revision: 8, keys: [:])),
        ])
        let marked = try ChangeSet(json: JSONParser.parse(marks.json(of: logged)))
        #expect(marked["locations"]?.attributes["311"]?[SchemaNames.oldIDAttribute] == -1)
        let other = EncodedChangeSet(revision: 6, json: logged.json)
        #expect(try marks.json(of: other) == logged.json, "another revision is spliced in as logged")
        #expect(try OldIDMarks(nil).json(of: logged) == logged.json)
    }

    @Test func aMarkThatCannotBeMadeIsAnErrorNotAnAnswerWithoutIt() throws {
        let marks = try OldIDMarks([
            PushResult(id: "a", status: .applied(revision: 7, keys: ["locations": ["-1": 311]]))
        ])
        let damaged = EncodedChangeSet(revision: 7, json: Array(#"{"revision":7,"types":"#.utf8))
        #expect(throws: OldIDMarks.MarkError.self) { try marks.json(of: damaged) }
        #expect(throws: OldIDMarks.MarkError.self) {
            try OldIDMarks([PushResult(id: "a", status: .applied(revision: 7, keys: ["locations": ["x": 311]]))])
        }
    }
}
