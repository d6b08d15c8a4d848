package import GRDB
package import SeedSyncModel
import SeedSyncSQL

/// The rows of one snapshot page, checked: each fits the schema, keys strictly increase from the
/// cursor, no revision is above the page's, and `next` agrees with the last row.
///
/// The rows stay the page's cells (``SnapshotCells``): checked in place, and bound from there by
/// ``insert(with:)``. A row that does not fit is read as values once, to be refused with the
/// message of ``SeedSyncModel/EntityType/validateSnapshotRow(_:)``.
package struct PageRows {
    private let cells: SnapshotCells
    private let type: EntityType
    /// The last key, or `nil` for an empty page.
    package let last: JSONValue?
    /// Whether the page says it is the type's last.
    package let isLast: Bool

    /// The number of rows.
    package var count: Int { cells.count }

    package init(_ page: FlatSnapshotPage, type: EntityType, after: JSONValue?) throws {
        let cells = page.rows
        self.cells = cells
        self.type = type
        isLast = page.next == .null
        let fields = type.fields.map { (type: $0.type, nullable: $0.nullable) }
        var previous: SnapshotCells.Cell?
        for row in 0..<cells.count {
            let positions = cells.cells(ofRow: row)
            guard Self.fits(cells, positions, key: type.primaryKey.type, fields: fields) else {
                throw Self.refusal(of: cells.row(row), type: type)
            }
            let key = cells[positions.lowerBound]
            let follows =
                if let previous {
                    cells.precedes(previous, key)
                } else {
                    after.map { JSONValue.keyPrecedes($0, cells.value(of: key)) } ?? true
                }
            guard follows else {
                let before = previous.map { cells.value(of: $0) } ?? after
                throw SeedError.invalidData(
                    "snapshot of \(type.name): key \(Self.name(cells.value(of: key))) does not follow \(Self.name(before))"
                )
            }
            let revision = cells[positions.upperBound - 1].int
            guard revision <= page.revision else {
                throw SeedError.invalidData(
                    "snapshot of \(type.name): row \(Self.name(cells.value(of: key))) is at revision \(revision), after the page's revision \(page.revision)"
                )
            }
            previous = key
        }
        last = previous.map { cells.value(of: $0) }
        guard isLast || (last != nil && page.next == last) else {
            throw SeedError.invalidData("snapshot page of \(type.name): 'next' is not the last key of the page")
        }
    }

    /// Runs `statement` (``SeedSyncSQL/TableSQL/insert``) for every row, in order.
    ///
    /// - Throws: ``SeedError`` when a key is repeated; `DatabaseError` for any other failure.
    package func insert(with statement: Statement) throws {
        let types = type.fields.map(\.type)
        for row in 0..<cells.count {
            do {
                try StatementValues.execute(statement, row: cells.cells(ofRow: row), of: cells, types: types)
            } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
                let key = cells.value(of: cells[cells.cells(ofRow: row).lowerBound])
                throw SeedError.invalidData("snapshot of \(type.name) repeats \(type.name)[\(Self.name(key))]")
            }
        }
    }

    /// Whether the row at `positions` is a key, a value for each field and a revision.
    private static func fits(
        _ cells: SnapshotCells, _ positions: Range<Int>, key: KeyType, fields: [(type: FieldType, nullable: Bool)]
    ) -> Bool {
        guard positions.count == fields.count + 2, cells.fits(cells[positions.lowerBound], key: key) else {
            return false
        }
        let revision = cells[positions.upperBound - 1]
        guard revision.kind == .int, revision.int >= 0 else { return false }
        for (offset, field) in fields.enumerated()
        where !cells.fits(cells[positions.lowerBound + 1 + offset], field.type, nullable: field.nullable) {
            return false
        }
        return true
    }

    /// The error of a row that does not fit, as ``SeedSyncModel/EntityType/validateSnapshotRow(_:)`` words it.
    private static func refusal(of row: [JSONValue], type: EntityType) -> SeedError {
        do {
            _ = try type.validateSnapshotRow(row)
            return SeedError.invalidData("snapshot of \(type.name): a row does not fit the schema")
        } catch {
            return SeedError.invalidData("snapshot of \(type.name): \(error)")
        }
    }

    private static func name(_ key: JSONValue?) -> String {
        key?.keyString ?? "?"
    }
}
