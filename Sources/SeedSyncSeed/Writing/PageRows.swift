package import SeedSyncModel

/// The rows of one snapshot page, checked: each fits the schema, keys strictly increase from the
/// cursor, no revision is above the page's, and `next` agrees with the last row.
package struct PageRows {
    package var rows: [(row: RowValues, revision: Int64)] = []
    /// The last key, or `nil` for an empty page.
    package var last: JSONValue? { rows.last?.row.key }
    /// Whether the page says it is the type's last.
    package let isLast: Bool

    package init(_ page: SnapshotPage, type: EntityType, after: JSONValue?) throws {
        isLast = page.next == .null
        rows.reserveCapacity(page.rows.count)
        var previous = after
        for values in page.rows {
            let checked: (row: RowValues, revision: Int64)
            do {
                checked = try type.validateSnapshotRow(values)
            } catch {
                throw SeedError.invalidData("snapshot of \(type.name): \(error)")
            }
            if let previous, !Self.precedes(previous, checked.row.key) {
                throw SeedError.invalidData(
                    "snapshot of \(type.name): key \(checked.row.key.keyString ?? "?") does not follow \(previous.keyString ?? "?")"
                )
            }
            guard checked.revision <= page.revision else {
                throw SeedError.invalidData(
                    "snapshot of \(type.name): row \(checked.row.key.keyString ?? "?") is at revision \(checked.revision), after the page's revision \(page.revision)"
                )
            }
            previous = checked.row.key
            rows.append(checked)
        }
        guard isLast || (last != nil && page.next == last) else {
            throw SeedError.invalidData("snapshot page of \(type.name): 'next' is not the last key of the page")
        }
    }

    /// Key order as SQLite sorts keys: integers numerically, text by UTF-8 bytes.
    static func precedes(_ first: JSONValue, _ second: JSONValue) -> Bool {
        switch (first, second) {
        case (.int(let a), .int(let b)): a < b
        case (.string(let a), .string(let b)): a.utf8.lexicographicallyPrecedes(b.utf8)
        default: false
        }
    }
}
