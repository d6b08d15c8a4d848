package import SeedSyncModel
package import SeedSyncStore

/// The `"__oldId__"` marks of a sync answer (PROTOCOL.md §5): in the change sets this request's
/// pushes became, each row created with a temporary key carries that key. Read once from the
/// push results; a mark that cannot be made is an error, never an answer without it.
package struct OldIDMarks {
    /// By revision, then type: the temporary key of each row, by the string of its real key.
    private var marks: [Int64: [String: [String: Int64]]] = [:]

    /// The marks of `results` (`nil`: nothing was pushed).
    ///
    /// - Throws: ``MarkError`` when a temporary key is not an integer or a real key not a key.
    package init(_ results: [PushResult]?) throws(MarkError) {
        for result in results ?? [] {
            guard case .applied(let revision, let keys) = result.status else { continue }
            for (type, map) in keys {
                for (temporary, real) in map {
                    guard let number = Int64(temporary), let key = real.keyString else {
                        throw MarkError("revision \(revision): \(type)[\(temporary)] has no integer temporary key")
                    }
                    marks[revision, default: [:]][type, default: [:]][key] = number
                }
            }
        }
    }

    /// The logged change set's JSON, with the marks of its revision when it has some.
    ///
    /// - Throws: ``MarkError`` when the logged change set cannot be read.
    package func json(of changeSet: EncodedChangeSet) throws(MarkError) -> [UInt8] {
        guard let types = marks[changeSet.revision] else { return changeSet.json }
        var marked: ChangeSet
        do {
            marked = try ChangeSet(json: JSONParser.parse(changeSet.json))
        } catch {
            throw MarkError("the logged change set of revision \(changeSet.revision) cannot be read: \(error)")
        }
        for index in marked.changes.indices {
            for (key, temporary) in types[marked.changes[index].type] ?? [:] {
                marked.changes[index].attributes[key]?[SchemaNames.oldIDAttribute] = .int(temporary)
            }
        }
        return marked.jsonBytes()
    }

    /// A mark that cannot be made: the server's fault, answered 500 and logged.
    package struct MarkError: Error, CustomStringConvertible {
        package let description: String
        init(_ description: String) { self.description = description }
    }
}
