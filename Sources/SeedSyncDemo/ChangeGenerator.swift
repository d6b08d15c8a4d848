import Foundation
public import SeedSyncModel

/// Generates realistic random change sets for any schema: creates, updates and deletes across
/// types that keep every reference valid. `seed-server mutate` uses it for demos, tests and
/// benchmarks.
///
/// Rows of the demo types look like ``DemoDataset``'s; other types get random values of their
/// field types. A row that other types may reference is deleted only if this generator created it
/// and never pointed a reference at it, so deletes never leave a dangling reference.
///
/// ```swift
/// var generator = ChangeGenerator(schema: schema, existingKeys: ["events": keys], seed: 7)
/// let changeSet = generator.next()
/// ```
public struct ChangeGenerator {
    private let schema: DatasetSchema
    private var random: SplitMix64
    private var live: [String: KeyPool] = [:]
    private var deletable: [String: KeyPool] = [:]
    private var nextInteger: [String: Int64] = [:]
    private var created = 0
    private let referencedTypes: Set<String>

    /// - Parameters:
    ///   - schema: the schema the change sets fit.
    ///   - existingKeys: the keys each type holds now.
    ///   - seed: the random seed; the same seed over the same keys gives the same change sets.
    public init(schema: DatasetSchema, existingKeys: [String: [JSONValue]], seed: UInt64) {
        self.schema = schema
        random = SplitMix64(seed: seed, stream: "mutate")
        referencedTypes = Set(schema.types.flatMap { $0.fields.compactMap(\.references) })
        for type in schema.types {
            let keys = existingKeys[type.name] ?? []
            live[type.name] = KeyPool(keys)
            nextInteger[type.name] = (keys.compactMap { if case .int(let n) = $0 { n } else { nil } }.max() ?? 0) + 1
        }
    }

    /// The next change set: one to four row changes.
    public mutating func next() -> ChangeSet {
        var builder = Builder(schema: schema)
        for _ in 0..<Int.random(in: 1...4, using: &random) {
            let type = pickType()
            switch Double.random(in: 0..<1, using: &random) {
            case ..<0.55: update(type, into: &builder)
            case ..<0.85: create(type, into: &builder)
            default: delete(type, into: &builder)
            }
        }
        if builder.isEmpty, let type = schema.types.first { create(type, into: &builder) }
        return builder.changeSet()
    }

    private mutating func pickType() -> EntityType {
        let weights = schema.types.map { Double(live[$0.name]!.count + 10) }
        var roll = Double.random(in: 0..<weights.reduce(0, +), using: &random)
        for (type, weight) in zip(schema.types, weights) {
            if roll < weight { return type }
            roll -= weight
        }
        return schema.types[schema.types.count - 1]
    }

    private mutating func create(_ type: EntityType, into builder: inout Builder) {
        let key = newKey(for: type)
        guard let values = values(for: type, key: key) else { return }
        builder.create(type.name, RowValues(key: key, values: values))
        live[type.name]!.insert(key)
        if referencedTypes.contains(type.name) { deletable[type.name, default: KeyPool([])].insert(key) }
    }

    private mutating func update(_ type: EntityType, into builder: inout Builder) {
        guard let key = live[type.name]!.randomElement(using: &random), !builder.touches(type.name, key) else {
            return create(type, into: &builder)
        }
        guard let values = values(for: type, key: key) else { return }
        builder.update(type.name, RowValues(key: key, values: values))
    }

    private mutating func delete(_ type: EntityType, into builder: inout Builder) {
        let candidate =
            referencedTypes.contains(type.name)
            ? deletable[type.name]?.randomElement(using: &random)
            : live[type.name]!.randomElement(using: &random)
        guard let key = candidate, !builder.touches(type.name, key) else { return update(type, into: &builder) }
        builder.delete(type.name, key)
        live[type.name]!.remove(key)
        deletable[type.name]?.remove(key)
    }

    private mutating func newKey(for type: EntityType) -> JSONValue {
        switch type.primaryKey.type {
        case .integer:
            defer { nextInteger[type.name]! += 1 }
            return .int(nextInteger[type.name]!)
        case .text:
            created += 1
            return .string("m\(String(random.next() % 1_000_000, radix: 36))-\(created)")
        }
    }

    /// Field values for a row, or `nil` when a required reference has nothing to point at.
    private mutating func values(for type: EntityType, key: JSONValue) -> [JSONValue]? {
        var values: [JSONValue] = []
        for field in type.fields {
            if let target = field.references {
                guard let reference = reference(to: target, nullable: field.nullable) else { return nil }
                values.append(reference)
            } else {
                values.append(RandomValues.value(for: field, using: &random))
            }
        }
        if schema.dataset == DemoDataset.schema.dataset, case .int(let id) = key {
            return demoValues(for: type, id: id, generic: values)
        }
        return values
    }

    /// Demo rows read like the generated dataset: each field the demo type has by name (in any
    /// schema version of the demo) takes the demo's value; the references chosen above are kept.
    private mutating func demoValues(for type: EntityType, id: Int64, generic: [JSONValue]) -> [JSONValue] {
        let location = type.fields.firstIndex { $0.references == "locations" }.map { generic[$0] } ?? .null
        let demo: RowValues
        switch type.name {
        case "locations": demo = DemoDataset.location(id: id, using: &random)
        case "events": demo = DemoDataset.event(id: id, location: location, using: &random)
        default: return generic
        }
        let names = DemoDataset.schema.type(named: type.name)!.fields.map(\.name)
        let byName = Dictionary(uniqueKeysWithValues: zip(names, demo.values))
        return zip(type.fields, generic).map { field, value in
            field.references == nil ? byName[field.name] ?? value : value
        }
    }

    private mutating func reference(to target: String, nullable: Bool) -> JSONValue? {
        if nullable, random.chance(0.1) { return .null }
        guard let key = live[target]!.randomElement(using: &random) else { return nullable ? .null : nil }
        deletable[target]?.remove(key)
        return key
    }
}

/// Live keys with O(1) insert, remove and random pick.
private struct KeyPool {
    private var keys: [JSONValue]
    private var index: [JSONValue: Int]

    init(_ keys: [JSONValue]) {
        self.keys = keys
        index = Dictionary(keys.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
    }

    var count: Int { keys.count }

    func randomElement(using random: inout SplitMix64) -> JSONValue? {
        keys.isEmpty ? nil : keys[Int.random(in: 0..<keys.count, using: &random)]
    }

    mutating func insert(_ key: JSONValue) {
        guard index[key] == nil else { return }
        index[key] = keys.count
        keys.append(key)
    }

    mutating func remove(_ key: JSONValue) {
        guard let position = index.removeValue(forKey: key) else { return }
        let last = keys.removeLast()
        if position < keys.count {
            keys[position] = last
            index[last] = position
        }
    }
}

/// Collects the row changes of one change set, at most one per row.
private struct Builder {
    let schema: DatasetSchema
    private var changes: [String: TypeChanges] = [:]
    private var touched: Set<String> = []

    init(schema: DatasetSchema) {
        self.schema = schema
    }

    var isEmpty: Bool { changes.isEmpty }

    func touches(_ type: String, _ key: JSONValue) -> Bool {
        touched.contains("\(type)/\(key.keyString!)")
    }

    mutating func create(_ type: String, _ row: RowValues) { add(type, row) { $0.create.append(row.key) } }
    mutating func update(_ type: String, _ row: RowValues) { add(type, row) { $0.update.append(row.key) } }

    mutating func delete(_ type: String, _ key: JSONValue) {
        touched.insert("\(type)/\(key.keyString!)")
        changes[type, default: TypeChanges(type: type)].delete.append(key)
    }

    private mutating func add(_ type: String, _ row: RowValues, list: (inout TypeChanges) -> Void) {
        touched.insert("\(type)/\(row.key.keyString!)")
        list(&changes[type, default: TypeChanges(type: type)])
        let names = schema.type(named: type)!.fields.map(\.name)
        changes[type]!.attributes[row.key.keyString!] = Dictionary(uniqueKeysWithValues: zip(names, row.values))
    }

    /// The change set, types in schema order.
    func changeSet() -> ChangeSet {
        ChangeSet(changes: schema.types.compactMap { changes[$0.name] })
    }
}
