/// One field of a type through the versions of a history: every name it had, and the versions
/// that have it (a contiguous range: a dropped field never comes back, see ``SchemaHistory``).
package struct FieldLineage: Sendable, Hashable {
    /// The field in each version that has it, by index in ``SchemaHistory/versions``.
    package var fields: [Int: Field]
    /// Every name the field had, oldest first, without repeats.
    package var names: [String]
    /// The first and last version (indices) that have the field.
    package var first: Int
    package var last: Int

    /// Whether the version at `index` has the field.
    package func isPresent(in index: Int) -> Bool { (first...last).contains(index) }

    /// The value a row written in the version at `index` without the field has for it: the
    /// default it was added with for rows from before it existed, the default it had when it was
    /// dropped for rows written after (or while its column was going).
    package func absentValue(writtenIn index: Int) -> JSONValue {
        index < first ? fields[first]!.absentValue : fields[last]!.absentValue
    }
}

extension SchemaHistory {
    /// The lineages of every type's fields (``lineages(of:)``), by type name.
    package func lineagesByType() -> [String: [FieldLineage]] {
        var names: [String] = []
        for version in versions {
            for type in version.schema.types where !names.contains(type.name) { names.append(type.name) }
        }
        return Dictionary(uniqueKeysWithValues: names.map { ($0, lineages(of: $0)) })
    }

    /// The lineages of the fields of `type`, over every version that has the type.
    package func lineages(of type: String) -> [FieldLineage] {
        var lineages: [FieldLineage] = []
        /// The lineage of each field name in the previous version.
        var previous: [String: Int] = [:]
        for (index, version) in versions.enumerated() {
            guard let entity = version.schema.type(named: type) else { continue }
            let renames = version.renames.filter { $0.type == type }
            var current: [String: Int] = [:]
            for field in entity.fields {
                let earlierName = renames.first { $0.to == field.name }?.from ?? field.name
                let renamedAway = renames.contains { $0.from == field.name && $0.to != field.name }
                if index > 0, let lineage = previous[earlierName], !(earlierName == field.name && renamedAway) {
                    lineages[lineage].fields[index] = field
                    lineages[lineage].last = index
                    if !lineages[lineage].names.contains(field.name) { lineages[lineage].names.append(field.name) }
                    current[field.name] = lineage
                } else {
                    lineages.append(
                        FieldLineage(fields: [index: field], names: [field.name], first: index, last: index))
                    current[field.name] = lineages.count - 1
                }
            }
            previous = current
        }
        return lineages
    }
}
