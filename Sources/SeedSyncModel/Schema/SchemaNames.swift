/// The naming rules shared by schemas, SQL and the wire.
public enum SchemaNames {
    /// The column every table carries: the revision that last wrote the row.
    public static let revisionColumn = "revision"
    /// The attribute that carries a created row's temporary key in the answer to its push.
    public static let oldIDAttribute = "__oldId__"
    /// The members of a change set besides its types, which no type may be named after.
    public static let changeSetMembers: Set<String> = ["types", "revision", "conflict", "id"]

    /// Whether `name` is a valid type or field name: `^[a-z][a-z0-9_]{0,62}$`.
    ///
    /// Only names that pass this check, and then match the schema, ever reach SQL.
    public static func isValid(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard (1...63).contains(bytes.count), isLowercaseLetter(bytes[0]) else { return false }
        return bytes.dropFirst().allSatisfy { isLowercaseLetter($0) || isDigit($0) || $0 == UInt8(ascii: "_") }
    }

    /// Whether `name` is a valid dataset name: `^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`.
    public static func isValidDataset(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard (1...128).contains(bytes.count), isAlphanumeric(bytes[0]) else { return false }
        return bytes.allSatisfy {
            isAlphanumeric($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-")
        }
    }

    private static func isLowercaseLetter(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
    }
    private static func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }
    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        isLowercaseLetter(byte) || isDigit(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
    }
}
