import Foundation
import GRDB
import SeedSyncModel
import SeedSyncSQL
import SeedSyncSeed
import Testing

/// The checks of a snapshot page as a build and a migration load it (`PageRows`), read from its
/// cells, with the messages a user sees.
@Suite struct PageRowsTests {
    static let things = EntityType(
        name: "things", primaryKey: PrimaryKey(name: "id", type: .integer),
        fields: [Field(name: "name", type: .text), Field(name: "score", type: .real, nullable: true)])

    static func page(_ rows: [[JSONValue]], revision: Int64 = 5, next: JSONValue = .null) -> FlatSnapshotPage {
        FlatSnapshotPage(
            SnapshotPage(
                type: "things", revision: revision, columns: ["id", "name", "score", "revision"], rows: rows,
                next: next))
    }

    func refusal(_ page: FlatSnapshotPage, after: JSONValue? = nil, type: EntityType = things) -> String? {
        do {
            _ = try PageRows(page, type: type, after: after)
            return nil
        } catch let error as SeedError {
            #expect(error.code == .invalidData)
            return error.description
        } catch {
            return "\(error)"
        }
    }

    @Test func aPageThatFitsIsTakenWithItsLastKey() throws {
        let rows = try PageRows(
            Self.page([[1, "a", 1.5, 2], [3, "b", .null, 5]], next: 3), type: Self.things, after: 0)
        #expect(rows.count == 2)
        #expect(rows.last == 3)
        #expect(!rows.isLast)
        let last = try PageRows(Self.page([]), type: Self.things, after: 3)
        #expect(last.isLast && last.last == nil && last.count == 0)
    }

    /// A row that does not fit is refused in the words of `validateSnapshotRow`, for each way of
    /// not fitting.
    @Test(
        arguments: [
            [1, 2, 1.5, 1], [1, .null, 1.5, 1], [1, "a", "x", 1], [1, "a", 1.5], [1.5, "a", 1.5, 1],
            ["k", "a", 1.5, 1],
            [1, "a", 1.5, -1], [1, "a", 1.5, "1"],
        ] as [[JSONValue]])
    func aRowThatDoesNotFitIsRefusedAsValidationWordsIt(row: [JSONValue]) {
        let validation = Result { try Self.things.validateSnapshotRow(row) }
        guard case .failure(let error) = validation else {
            Issue.record("validation took \(row)")
            return
        }
        #expect(refusal(Self.page([row])) == "snapshot of things: \(error)")
    }

    @Test func keysMustIncreaseFromTheCursor() {
        #expect(refusal(Self.page([[5, "a", 1.5, 1]]), after: 5) == "snapshot of things: key 5 does not follow 5")
        #expect(
            refusal(Self.page([[2, "a", 1.5, 1], [1, "b", 1.5, 1]])) == "snapshot of things: key 1 does not follow 2")
        let named = EntityType(
            name: "things", primaryKey: PrimaryKey(name: "id", type: .text), fields: Self.things.fields)
        // Bytewise: "Z" (0x5A) before "a" (0x61), "a" before "é" (0xC3 0xA9).
        #expect(
            refusal(Self.page([["Z", "a", 1.5, 1], ["a", "b", 1.5, 1], ["é", "c", 1.5, 1]]), type: named) == nil)
        #expect(
            refusal(Self.page([["a", "a", 1.5, 1], ["Z", "b", 1.5, 1]]), type: named)
                == "snapshot of things: key Z does not follow a")
        #expect(refusal(Self.page([["a", "a", 1.5, 1]]), after: "a", type: named) != nil)
    }

    @Test func rowsAfterThePagesRevisionAndAWrongNextAreRefused() {
        #expect(
            refusal(Self.page([[1, "a", 1.5, 7]], revision: 5))
                == "snapshot of things: row 1 is at revision 7, after the page's revision 5")
        #expect(
            refusal(Self.page([[1, "a", 1.5, 1]], next: 2))
                == "snapshot page of things: 'next' is not the last key of the page")
        #expect(refusal(Self.page([], next: 2)) == "snapshot page of things: 'next' is not the last key of the page")
    }

    /// The rows are written as checked, values through the one mapping; a key written twice (a
    /// page repeated across a cursor the file lost) names the row.
    @Test func insertWritesTheRowsAndNamesARepeatedKey() throws {
        let queue = try DatabaseQueue()
        let table = TableSQL(type: Self.things)
        try queue.write { db in
            for statement in table.create { try db.execute(sql: statement) }
            let rows = try PageRows(Self.page([[1, "a", 2, 2], [3, "é", .null, 5]]), type: Self.things, after: nil)
            try rows.insert(with: db.cachedStatement(sql: table.insert))
            let stored = try Row.fetchAll(db, sql: "SELECT id, name, score, typeof(score), revision FROM things")
            #expect(stored.map { $0[0] as Int64 } == [1, 3])
            #expect(stored.map { $0[1] as String } == ["a", "é"])
            #expect(stored.map { $0[3] as String } == ["real", "null"])
            #expect(stored.map { $0[4] as Int64 } == [2, 5])
            let again = try PageRows(Self.page([[3, "x", 1.5, 5]]), type: Self.things, after: nil)
            #expect { try again.insert(with: db.cachedStatement(sql: table.insert)) } throws: {
                "\($0)" == "snapshot of things repeats things[3]"
            }
        }
    }
}
