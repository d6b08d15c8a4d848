import SeedSyncModel
import SeedSyncSeed

/// The server's schema narrowed to the types a build asked for.
struct SchemaSelection {
    let schema: DatasetSchema

    /// - Throws: ``SeedError`` for an unknown type, or a chosen type that references one left out.
    init(info: SchemaInfo, types: [String]?) throws {
        let full = info.schema
        guard let types else {
            schema = full
            return
        }
        let chosen = Set(types)
        if let unknown = types.first(where: { full.type(named: $0) == nil }) {
            throw SeedError(
                .unusable,
                "the server has no type '\(unknown)'; it has \(full.types.map(\.name).joined(separator: ", ")) (choose with --types)"
            )
        }
        for type in full.types where chosen.contains(type.name) {
            for field in type.fields {
                if let target = field.references, !chosen.contains(target) {
                    throw SeedError(
                        .unusable,
                        "\(type.name).\(field.name) references \(target); add \(target) to the selected types (--types)"
                    )
                }
            }
        }
        schema = DatasetSchema(
            dataset: full.dataset, schemaVersion: full.schemaVersion,
            types: full.types.filter { chosen.contains($0.name) }, scope: full.scope)
    }
}
