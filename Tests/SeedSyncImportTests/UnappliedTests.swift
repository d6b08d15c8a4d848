import SeedSyncDemo
import SeedSyncImport
import SeedSyncModel
import SeedSyncSeed
import Testing

/// `Unapplied`, the change sets a catch-up holds between answers: when it has enough to apply,
/// and how it cuts them into transactions.
@Suite struct UnappliedTests {
    static let applier = ChangeApplier(schema: DemoDataset.schema)

    /// A checked change set at `revision` that deletes `rows` locations.
    static func deleting(_ rows: Int, revision: Int64) throws -> CheckedChangeSet {
        let keys = (0..<rows).map { JSONValue.int(revision * 10_000 + Int64($0)) }
        return try applier.check(ChangeSet(revision: revision, changes: [TypeChanges(type: "locations", delete: keys)]))
    }

    @Test func theFirstTransactionsAreSmallerThenFull() throws {
        var unapplied = Unapplied(maxRows: 1_600)
        var revision: Int64 = 0
        var sizes: [Int] = []
        for _ in 0..<6 {
            while !unapplied.isFull {
                revision += 1
                unapplied.append([try Self.deleting(50, revision: revision)])
            }
            sizes.append(unapplied.take().joined().reduce(0) { $0 + $1.rowCount })
            #expect(unapplied.rows == 0)
        }
        #expect(sizes == [100, 200, 400, 800, 1_600, 1_600])
    }

    @Test func heldChangeSetsAreCutIntoTransactionsOfAtMostMaxRows() throws {
        var unapplied = Unapplied(maxRows: 1_600)
        unapplied.append(try (1...6).map { try Self.deleting(300, revision: $0) })
        unapplied.append([try Self.deleting(2_000, revision: 7), try Self.deleting(10, revision: 8)])
        let batches = unapplied.take()
        // A change set larger than a transaction goes alone; the order is kept.
        #expect(batches.map { $0.map(\.rowCount) } == [[300, 300, 300, 300, 300], [300], [2_000], [10]])
        #expect(batches.joined().map(\.revision) == (1...8).map { $0 })
    }
}

extension UnappliedTests {
    /// Change sets without rows (of types the database left out) still count: a long run of them
    /// is applied in bounded transactions, not held without end.
    @Test func changeSetsWithoutRowsCountAsOneRow() throws {
        var unapplied = Unapplied(maxRows: 64)
        unapplied.append(try (1...4).map { try Self.deleting(0, revision: $0) })
        #expect(unapplied.isFull)
        unapplied.append(try (5...200).map { try Self.deleting(0, revision: $0) })
        #expect(unapplied.take().map(\.count) == [64, 64, 64, 8])
    }
}
