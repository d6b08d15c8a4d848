public import SeedSyncModel
public import SeedSyncStore

/// The built-in demo dataset, after the case study's domain: `locations` and `events`.
///
/// Rows are generated from a seed, the same on every machine, at any size:
///
/// ```swift
/// let demo = DemoDataset(events: 100_000, locations: 2_000, seed: 1)
/// var rows = demo.rows(of: "events")
/// while let row = rows.next() { … }
/// ```
public struct DemoDataset: Sendable {
    public let eventCount: Int
    public let locationCount: Int
    public let seed: UInt64

    public init(events: Int, locations: Int, seed: UInt64) {
        eventCount = events
        locationCount = locations
        self.seed = seed
    }

    /// The demo schema, version 1.
    public static let schema = DatasetSchema(
        dataset: "demo",
        schemaVersion: 1,
        types: [
            EntityType(
                name: "locations",
                primaryKey: PrimaryKey(name: "id", type: .integer),
                fields: [
                    Field(name: "name", type: .text),
                    Field(name: "city", type: .text),
                    Field(name: "latitude", type: .real),
                    Field(name: "longitude", type: .real),
                ]
            ),
            EntityType(
                name: "events",
                primaryKey: PrimaryKey(name: "id", type: .integer),
                fields: [
                    Field(name: "title", type: .text),
                    Field(name: "starts_at", type: .timestamp),
                    Field(name: "ends_at", type: .timestamp, nullable: true),
                    Field(name: "location_id", type: .integer, nullable: true, references: "locations"),
                    Field(name: "capacity", type: .integer),
                    Field(name: "cancelled", type: .boolean),
                    Field(name: "description", type: .text, nullable: true),
                ]
            ),
        ]
    )

    /// Version 2 of the demo schema, an upgrade of ``schema`` that uses every kind of change:
    /// `events.title` renamed to `name` (see ``v2Renames``), `events.notes` added (nullable),
    /// `events.description` dropped, and a new type `venues` that `events.venue_id` (new,
    /// nullable) references.
    public static let schemaV2: DatasetSchema = {
        var events = schema.types[1]
        events.fields[0].name = "name"
        events.fields.removeAll { $0.name == "description" }
        events.fields += [
            Field(name: "notes", type: .text, nullable: true),
            Field(name: "venue_id", type: .integer, nullable: true, references: "venues"),
        ]
        let venues = EntityType(
            name: "venues", primaryKey: PrimaryKey(name: "id", type: .integer),
            fields: [Field(name: "name", type: .text), Field(name: "seats", type: .integer, default: 0)])
        return DatasetSchema(dataset: "demo", schemaVersion: 2, types: [schema.types[0], events, venues])
    }()

    /// The rename ``schemaV2`` states.
    public static let v2Renames = [FieldRename(type: "events", from: "title", to: "name")]

    /// What a team runs on PostgreSQL (tables in schema `public`) before upgrading to ``schemaV2``.
    public static let v2Alterations = """
        ALTER TABLE public.events RENAME COLUMN title TO name;
        ALTER TABLE public.events ADD COLUMN notes text;
        ALTER TABLE public.events DROP COLUMN description;
        CREATE TABLE public.venues (id bigint PRIMARY KEY, name text NOT NULL, seats bigint NOT NULL DEFAULT 0);
        ALTER TABLE public.events ADD COLUMN venue_id bigint REFERENCES public.venues DEFERRABLE INITIALLY DEFERRED
        """

    /// Every type's rows, as one bulk load (locations before the events that reference them).
    public var loads: [BulkLoad] {
        Self.schema.types.map { type in BulkLoad(type: type.name) { rows(of: type.name) } }
    }

    /// Loads every row into `store` as one revision (revision 1 in a new store).
    ///
    /// ```swift
    /// try await SQLiteSyncStore.create(at: path, schema: DemoDataset.schema) { store in
    ///     try await DemoDataset(events: 1_000, locations: 20, seed: 1).load(into: store)
    /// }
    /// ```
    ///
    /// - Returns: the revision the rows have.
    @discardableResult
    public func load(into store: any MaintainedSyncStore) async throws -> Int64 {
        let revision = try await store.bulkLoad(loads).revision
        // The demo's history is a function of its parameters, and so is its history chain: the
        // same demo gives the same seed, byte for byte (`scripts/tools/build-seed.sh`). A store
        // of a team's own starts its chain from random bytes instead (see `HistoryLedger`).
        if let records = store as? any HistoryChainRecords {
            let recipe = "seedsync demo dataset: events=\(eventCount) locations=\(locationCount) seed=\(seed)"
            let base = HistoryChain(bytes: Array(repeating: 0, count: 32))!.extended(by: Array(recipe.utf8))
            try await records.storeChains([(revision, base)])
        }
        return revision
    }

    /// The rows of `type`, keys 1…count, in key order. Load the types in schema order (`locations`
    /// first): events reference locations.
    public func rows(of type: String) -> DemoRows {
        let count = type == "locations" ? locationCount : type == "events" ? eventCount : 0
        let locationCount = self.locationCount
        var random = SplitMix64(seed: seed, stream: type)
        return DemoRows(count: count) { id in
            type == "locations"
                ? Self.location(id: id, using: &random)
                : Self.event(id: id, locationCount: locationCount, using: &random)
        }
    }

    /// A random `locations` row.
    static func location(id: Int64, using random: inout some RandomNumberGenerator) -> RowValues {
        let name = "\(random.pick(Words.placeAdjectives)) \(random.pick(Words.placeNouns))"
        let (city, latitude, longitude) = random.pick(Words.cities)
        return RowValues(
            key: .int(id),
            values: [
                .string(name),
                .string(city),
                .double(rounded(latitude + Double.random(in: -0.1...0.1, using: &random))),
                .double(rounded(longitude + Double.random(in: -0.1...0.1, using: &random))),
            ])
    }

    /// A random `events` row whose location, if any, is one of `1…locationCount`.
    static func event(id: Int64, locationCount: Int, using random: inout some RandomNumberGenerator) -> RowValues {
        event(
            id: id,
            location: locationCount > 0 && random.chance(0.9)
                ? .int(Int64.random(in: 1...Int64(locationCount), using: &random)) : .null, using: &random)
    }

    static func event(id: Int64, location: JSONValue, using random: inout some RandomNumberGenerator) -> RowValues {
        let start = Int64(1_767_225_600) + Int64.random(in: 0..<(730 * 96), using: &random) * 900
        let end: JSONValue =
            random.chance(0.8)
            ? .string(Timestamps.rfc3339(start + Int64.random(in: 2...16, using: &random) * 900)) : .null
        let title = "\(random.pick(Words.genres)) \(random.pick(Words.eventNouns))"
        let description: JSONValue =
            random.chance(0.6)
            ? .string("\(title) with \(random.pick(Words.hosts)). \(random.pick(Words.notes))") : .null
        return RowValues(
            key: .int(id),
            values: [
                .string(title),
                .string(Timestamps.rfc3339(start)),
                end,
                location,
                .int(Int64.random(in: 10...5_000, using: &random)),
                .bool(random.chance(0.05)),
                description,
            ])
    }

    private static func rounded(_ value: Double) -> Double {
        (value * 1_000_000).rounded() / 1_000_000
    }
}

/// The rows of one demo type, generated one at a time.
public struct DemoRows: Sequence, IteratorProtocol {
    private let count: Int
    private var nextID: Int64 = 1
    private var make: (Int64) -> RowValues

    init(count: Int, make: @escaping (Int64) -> RowValues) {
        self.count = count
        self.make = make
    }

    public mutating func next() -> RowValues? {
        guard nextID <= count else { return nil }
        defer { nextID += 1 }
        return make(nextID)
    }
}

enum Words {
    static let placeAdjectives = [
        "Riverside", "Old", "Grand", "Little", "North", "Harbour", "Garden", "Royal", "Union", "Crystal",
    ]
    static let placeNouns = [
        "Hall", "Theatre", "Arena", "Club", "Gallery", "Park", "Pavilion", "Studio", "Library", "Market",
    ]
    static let cities: [(String, Double, Double)] = [
        ("Berlin", 52.52, 13.405), ("Lisbon", 38.722, -9.139), ("Oslo", 59.913, 10.752), ("Vienna", 48.208, 16.373),
        ("Montréal", 45.501, -73.567), ("Kyoto", 35.011, 135.768), ("Cape Town", -33.925, 18.424),
        ("Lima", -12.046, -77.043),
    ]
    static let genres = [
        "Jazz", "Chess", "Poetry", "Robotics", "Yoga", "Film", "Folk", "Pottery", "Startup", "Board game",
    ]
    static let eventNouns = [
        "Night", "Meetup", "Workshop", "Festival", "Evening", "Session", "Marathon", "Circle", "Fair", "Talk",
    ]
    static let hosts = [
        "local volunteers", "the city library", "guest speakers", "a touring band", "students", "the \"Night Owls\"",
    ]
    static let notes = [
        "Bring a friend.", "Free entry.", "Tickets at the door.", "Step-free access.", "Doors open 30 minutes early.",
        "Zwei Räume, één ticket 🎟",
    ]
}

extension DemoRows: RowSource {
    public mutating func nextRow() -> RowValues? { next() }
}
