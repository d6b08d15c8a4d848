import Foundation
public import SeedSyncModel

/// Reads an NDJSON file (one JSON object per line, primary key included) row by row, checking
/// each against the type. Memory stays flat: the file is read in 1 MiB chunks.
///
/// ```swift
/// var rows = try NDJSONRowReader(path: "events.ndjson", type: events)
/// while let row = try rows.nextRow() { … }
/// ```
public struct NDJSONRowReader: RowSource {
    /// The longest line accepted by default: 16 MiB.
    public static let defaultMaxLineLength = 16 << 20

    private let path: String
    private let type: EntityType
    private let handle: FileHandle
    private var buffer: [UInt8] = []
    private var position = 0
    private var isAtEnd = false
    private var lineNumber = 0
    private let decoder = JSONDecoder()
    private let maxLineLength: Int

    /// - Throws: ``LoadError`` when the file cannot be opened.
    public init(path: String, type: EntityType, maxLineLength: Int = defaultMaxLineLength) throws {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw LoadError(.unreadable, "cannot open \(path) for reading")
        }
        self.path = path
        self.type = type
        self.handle = handle
        self.maxLineLength = maxLineLength
    }

    public mutating func nextRow() throws -> RowValues? {
        while let line = try nextLine() {
            lineNumber += 1
            guard line.contains(where: { !Self.isWhitespace($0) }) else { continue }
            let object: [String: JSONValue]
            do {
                object = try decoder.decode([String: JSONValue].self, from: Data(line))
            } catch {
                throw LoadError(.malformed, "\(path):\(lineNumber): not a JSON object")
            }
            do {
                return try type.validateRow(object)
            } catch {
                throw LoadError(.malformed, "\(path):\(lineNumber): \(error)")
            }
        }
        try? handle.close()
        return nil
    }

    private mutating func nextLine() throws -> ArraySlice<UInt8>? {
        while true {
            let end = buffer[position...].firstIndex(of: UInt8(ascii: "\n"))
            guard (end ?? buffer.count) - position <= maxLineLength else {
                throw LoadError(.malformed, "\(path):\(lineNumber + 1): line longer than \(maxLineLength) bytes")
            }
            if let end {
                defer { position = end + 1 }
                return buffer[position..<end]
            }
            guard !isAtEnd else {
                defer { position = buffer.count }
                return position < buffer.count ? buffer[position...] : nil
            }
            buffer.removeFirst(position)
            position = 0
            let chunk = try handle.read(upToCount: 1 << 20) ?? Data()
            if chunk.isEmpty { isAtEnd = true } else { buffer.append(contentsOf: chunk) }
        }
    }

    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0D
    }
}

/// A bulk load's input that cannot be read: the file, or a line of it (named by path and line).
public struct LoadError: Error, CustomStringConvertible, Sendable {
    /// What went wrong. New codes may be added: compare with the static members.
    public struct Code: Sendable, Hashable {
        private let rawValue: String
        private init(_ rawValue: String) { self.rawValue = rawValue }

        /// The file cannot be opened or read.
        public static let unreadable = Self("unreadable")
        /// A line is not an object of the type, or too long.
        public static let malformed = Self("malformed")
    }

    public let code: Code
    public let description: String

    public init(_ code: Code, _ description: String) {
        self.code = code
        self.description = description
    }
}
