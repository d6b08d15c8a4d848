/// The rows of a snapshot page as flat cells: one array of cells for the whole page and one
/// buffer for the bytes of its strings, instead of an array per row and a `JSONValue` per value.
///
/// Loaders read pages this way (``FlatSnapshotPage``): a million-row download made a million
/// arrays and several million strings to bind each once and drop them, and the allocations
/// and reference counting cost more than SQLite's inserts. A string's bytes stay in the buffer
/// (unescaped, valid UTF-8) until a statement binds them; an array or object inside a row (a
/// `json` field's value) is kept as a ``JSONValue``.
///
/// ```swift
/// let cells = SnapshotCells([[1, "Gig", 17], [2, .null, 40]])
/// cells.count              // 2
/// cells.row(1)             // [2, null, 40]
/// ```
package struct SnapshotCells: Sendable, Hashable {
    /// What a cell holds.
    package enum Kind: UInt8, Sendable, Hashable {
        case null, bool, int, double, string, nested
    }

    /// One value: its kind, and a number whose meaning goes by kind (the flag, the integer, the
    /// double's bits, the string's start in the text buffer, the nested value's index).
    package struct Cell: Sendable, Hashable {
        package let kind: Kind
        fileprivate let payload: Int64
        fileprivate let length: Int32

        /// The integer of an `int` cell.
        package var int: Int64 { payload }
    }

    private var cells: [Cell] = []
    /// The end of each row in `cells`.
    private var rowEnds: [Int] = []
    private var text: [UInt8] = []
    private var nested: [JSONValue] = []
    /// The first row that is not an array: the page is refused, naming it.
    package private(set) var firstNonArrayRow: Int?

    package init() {}

    /// The cells of `rows`, each value as the parser would have made it.
    package init(_ rows: [[JSONValue]]) {
        for row in rows {
            for value in row { append(value) }
            endRow()
        }
    }

    /// The number of rows.
    package var count: Int { rowEnds.count }

    /// The positions of row `row`'s cells, for ``subscript(_:)``.
    package func cells(ofRow row: Int) -> Range<Int> {
        (row == 0 ? 0 : rowEnds[row - 1])..<rowEnds[row]
    }

    package subscript(position: Int) -> Cell { cells[position] }

    /// Calls `body` with the UTF-8 bytes of a `string` cell.
    package func withBytes<R>(of cell: Cell, _ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        try text.withUnsafeBufferPointer { buffer in
            try body(UnsafeBufferPointer(rebasing: buffer[Int(cell.payload)..<Int(cell.payload) + Int(cell.length)]))
        }
    }

    /// The number of bytes of a `string` cell.
    package func byteCount(of cell: Cell) -> Int { Int(cell.length) }

    /// The cell as a ``JSONValue``.
    package func value(of cell: Cell) -> JSONValue {
        switch cell.kind {
        case .null: .null
        case .bool: .bool(cell.payload != 0)
        case .int: .int(cell.payload)
        case .double: .double(Double(bitPattern: UInt64(bitPattern: cell.payload)))
        case .string: .string(withBytes(of: cell) { String(decoding: $0, as: UTF8.self) })
        case .nested: nested[Int(cell.payload)]
        }
    }

    /// Row `row` as values.
    package func row(_ row: Int) -> [JSONValue] {
        cells(ofRow: row).map { value(of: cells[$0]) }
    }

    /// Every row as values.
    package var rows: [[JSONValue]] {
        (0..<count).map { row($0) }
    }

    /// Whether key `first` sorts before key `second`, as ``JSONValue/keyPrecedes(_:_:)`` says of
    /// their values (integers numerically, text by UTF-8 bytes, as SQLite sorts keys), read from
    /// the cells; `false` for cells of different kinds or that are not keys.
    package func precedes(_ first: Cell, _ second: Cell) -> Bool {
        switch (first.kind, second.kind) {
        case (.int, .int): return first.payload < second.payload
        case (.string, .string):
            return withBytes(of: first) { a in withBytes(of: second) { b in a.lexicographicallyPrecedes(b) } }
        default: return false
        }
    }

    // MARK: Building

    /// Appends a value to the current row.
    package mutating func append(_ value: JSONValue) {
        switch value {
        case .null: cells.append(Cell(kind: .null, payload: 0, length: 0))
        case .bool(let flag): cells.append(Cell(kind: .bool, payload: flag ? 1 : 0, length: 0))
        case .int(let number): cells.append(Cell(kind: .int, payload: number, length: 0))
        case .double(let number):
            cells.append(Cell(kind: .double, payload: Int64(bitPattern: number.bitPattern), length: 0))
        case .string(var string): string.withUTF8 { appendString($0) }
        case .array, .object:
            cells.append(Cell(kind: .nested, payload: Int64(nested.count), length: 0))
            nested.append(value)
        }
    }

    /// Appends a string cell of these UTF-8 bytes (at most `Int32.max` of them) to the current row.
    package mutating func appendString(_ bytes: UnsafeBufferPointer<UInt8>) {
        cells.append(Cell(kind: .string, payload: Int64(text.count), length: Int32(bytes.count)))
        text.append(contentsOf: bytes)
    }

    /// Ends the current row.
    package mutating func endRow() {
        rowEnds.append(cells.count)
    }

    /// Marks row `count` as not an array, and ends it (empty).
    package mutating func appendNonArrayRow() {
        if firstNonArrayRow == nil { firstNonArrayRow = count }
        endRow()
    }

    /// Room for `cells` cells in `rows` rows and `bytes` bytes of text.
    package mutating func reserveCapacity(cells count: Int, rows: Int, bytes: Int) {
        cells.reserveCapacity(count)
        rowEnds.reserveCapacity(rows)
        text.reserveCapacity(bytes)
    }
}
