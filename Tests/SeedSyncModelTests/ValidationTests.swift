import Foundation
import SeedSyncModel
import SeedSyncTesting
import Testing

@Suite struct SchemaValidationTests {
    @Test func demoAndCatalogSchemasAreValid() throws {
        try Fixtures.catalogSchema.validate()
    }

    @Test(arguments: [
        ("Bad", "type name 'Bad'"),
        ("sqlite_master", "must not start with sqlite_"),
        ("x234567890123456789012345678901234567890123456789012345678901234", "type name"),
    ])
    func rejectsBadTypeNames(name: String, message: String) {
        let schema = DatasetSchema(
            dataset: "d", schemaVersion: 1,
            types: [
                EntityType(name: name, primaryKey: PrimaryKey(name: "id", type: .integer), fields: [])
            ])
        #expect { try schema.validate() } throws: { "\($0)".contains(message) }
    }

    @Test func rejectsReservedDuplicateAndDanglingDeclarations() {
        func schema(_ fields: [Field], key: String = "id") -> DatasetSchema {
            DatasetSchema(
                dataset: "d", schemaVersion: 1,
                types: [
                    EntityType(name: "things", primaryKey: PrimaryKey(name: key, type: .integer), fields: fields)
                ])
        }
        let broken: [(DatasetSchema, SchemaError.Code)] = [
            (schema([Field(name: "revision", type: .integer)]), .reservedName),
            (schema([], key: "revision"), .reservedName),
            (schema([Field(name: "id", type: .text)]), .duplicateName),
            (schema([Field(name: "a", type: .text), Field(name: "a", type: .text)]), .duplicateName),
            (schema([Field(name: "x", type: .integer, references: "nowhere")]), .invalidReference),
            (schema([Field(name: "x", type: .text, references: "things")]), .invalidReference),
            (schema([Field(name: "Title", type: .text)]), .invalidName),
            (DatasetSchema(dataset: "d", schemaVersion: 1, types: []), .noTypes),
            (DatasetSchema(dataset: "a b", schemaVersion: 1, types: schema([]).types), .invalidName),
            (DatasetSchema(dataset: "d", schemaVersion: 0, types: schema([]).types), .invalidVersion),
            (
                DatasetSchema(
                    dataset: "d", schemaVersion: 1,
                    types: [EntityType(name: "types", primaryKey: PrimaryKey(name: "id", type: .integer), fields: [])]),
                .reservedName
            ),
            (
                DatasetSchema(
                    dataset: "d", schemaVersion: 1,
                    types: [
                        EntityType(name: "conflict", primaryKey: PrimaryKey(name: "id", type: .integer), fields: [])
                    ]), .reservedName
            ),
        ]
        for (schema, code) in broken {
            #expect { try schema.validate() } throws: { ($0 as? SchemaError)?.code == code }
        }
        // A type named like a change-set member is refused for new stores only: seeds and servers
        // made before the rule are still read.
        let existing = DatasetSchema(
            dataset: "d", schemaVersion: 1,
            types: [
                EntityType(name: "conflict", primaryKey: PrimaryKey(name: "id", type: .integer), fields: [])
            ])
        #expect(throws: Never.self) { try existing.validate(allowingReservedTypeNames: true) }
    }
}

/// The limits and names every way a schema enters a store checks (`DatasetSchema.validate()`).
@Suite struct SchemaLimitTests {
    static func type(_ name: String, fields: [Field] = []) -> EntityType {
        EntityType(name: name, primaryKey: PrimaryKey(name: "id", type: .integer), fields: fields)
    }

    @Test func schemasPastTheLimitsOrNamedLikeSeedSyncsObjectsAreRefused() {
        let refused: [(DatasetSchema, SchemaError.Code, String)] = [
            (
                DatasetSchema(dataset: "d", schemaVersion: 1, types: (0...500).map { Self.type("t\($0)") }),
                .tooLarge, "501 types"
            ),
            (
                DatasetSchema(
                    dataset: "d", schemaVersion: 1,
                    types: [Self.type("w", fields: (0...1000).map { Field(name: "f\($0)", type: .integer) })]),
                .tooLarge, "1001 fields"
            ),
            (
                DatasetSchema(
                    dataset: "d", schemaVersion: 1,
                    types: [
                        Self.type(
                            "w",
                            fields: [
                                Field(name: "f", type: .text, default: .string(String(repeating: "é", count: 3000)))
                            ])
                    ]),
                .tooLarge, "the default of w.f"
            ),
            (
                DatasetSchema(
                    dataset: "d", schemaVersion: 1,
                    types: [Self.type("w", fields: [Field(name: "f", type: .json, default: .object(["a\u{0}": 1]))])]),
                .invalidDefault, "U+0000"
            ),
            (
                DatasetSchema(
                    dataset: "d", schemaVersion: 1,
                    types: [
                        Self.type("a", fields: [Field(name: "b", type: .integer, nullable: true, references: "a")]),
                        Self.type("a_b_index"),
                    ]),
                .reservedName, "a_b_index"
            ),
        ]
        for (schema, code, words) in refused {
            #expect { try schema.validate() } throws: { ($0 as? SchemaError)?.code == code && "\($0)".contains(words) }
        }
        let wide = DatasetSchema(
            dataset: "d", schemaVersion: 1,
            types: (0..<499).map { Self.type("t\($0)") }
                + [Self.type("w", fields: (0..<1000).map { Field(name: "f\($0)", type: .integer) })])
        #expect(throws: Never.self) { try wide.validate() }
    }

    /// A type named like a change-set member, allowed before the rule, keeps its name through an
    /// upgrade; a new one is refused.
    @Test func reservedNamesAreKeptButNeverNew() throws {
        let old = DatasetSchema(dataset: "d", schemaVersion: 1, types: [Self.type("conflict")])
        var next = old
        next.schemaVersion = 2
        next.types.append(Self.type("items"))
        #expect(throws: Never.self) { try next.validate(after: old) }
        next.types.append(Self.type("types"))
        #expect { try next.validate(after: old) } throws: { ($0 as? SchemaError)?.code == .reservedName }
    }

    /// A default reads back as its field's type has it: JSON writes the real 0.0 as `0`.
    @Test func defaultsDecodeAsTheirFieldsType() throws {
        let json = #"{"name": "r", "type": "real", "nullable": false, "default": 0}"#
        let field = try JSONDecoder().decode(Field.self, from: Data(json.utf8))
        #expect(field.default == .double(0))
        let schema = DatasetSchema(dataset: "d", schemaVersion: 1, types: [Self.type("t", fields: [field])])
        #expect(try JSONDecoder().decode(DatasetSchema.self, from: JSONEncoder().encode(schema)) == schema)
    }
}

@Suite struct ChangeSetValidationTests {
    let schema = Fixtures.catalogSchema

    @Test func normalizesValuesInSchemaOrder() throws {
        let changes = try schema.validate(Fixtures.catalogCreation())
        #expect(changes.map(\.type.name) == ["authors", "books"])
        #expect(changes[0].creates[0].values == ["Ursula K. Le Guin", "1929-10-21T00:00:00Z", "AAEC"])
        // price 12 becomes a real, pages (nullable, left out) becomes null
        #expect(changes[1].creates[0].values == ["The Dispossessed", "le-guin", .double(12), true, .null])
    }

    @Test(arguments: [
        (#"{"types":["nope"],"nope":{}}"#, "unknown type 'nope'", ChangeSetError.Code.unknownType),
        (#"{"types":["books","books"],"books":{}}"#, "appears twice", ChangeSetError.Code.malformed),
        (#"{"types":[]}"#, "no types", ChangeSetError.Code.malformed),
        (
            #"{"types":["books"],"books":{"create":[1],"attributes":{"1":{"title":"T","price":1,"in_stock":true,"colour":"red"}}}}"#,
            "unknown field 'colour'", ChangeSetError.Code.unknownField
        ),
        (
            #"{"types":["books"],"books":{"create":[1],"attributes":{"1":{"title":5,"price":1,"in_stock":true}}}}"#,
            "books[1].title: expected a string, got integer", ChangeSetError.Code.invalidValue
        ),
        (
            #"{"types":["books"],"books":{"create":[1],"attributes":{"1":{"title":"T","price":"1","in_stock":true}}}}"#,
            "expected a number", ChangeSetError.Code.invalidValue
        ),
        (
            #"{"types":["books"],"books":{"create":[1],"attributes":{"1":{"title":"T","price":1,"in_stock":1}}}}"#,
            "expected true or false", ChangeSetError.Code.invalidValue
        ),
        (
            #"{"types":["books"],"books":{"create":[1],"attributes":{"1":{"title":"T","price":1,"in_stock":true,"pages":1.5}}}}"#,
            "expected an integer", ChangeSetError.Code.invalidValue
        ),
        (
            #"{"types":["books"],"books":{"create":[1],"attributes":{"1":{"price":1,"in_stock":true}}}}"#,
            "books[1].title is missing", ChangeSetError.Code.invalidValue
        ),
        (
            #"{"types":["books"],"books":{"create":[1],"attributes":{"1":{"title":null,"price":1,"in_stock":true}}}}"#,
            "not nullable", ChangeSetError.Code.invalidValue
        ),
        (#"{"types":["books"],"books":{"create":[1]}}"#, "books[1] has no attributes", ChangeSetError.Code.malformed),
        (
            #"{"types":["books"],"books":{"create":[1],"delete":[1],"attributes":{"1":{"title":"T","price":1,"in_stock":true}}}}"#,
            "more than once", ChangeSetError.Code.malformed
        ),
        (
            #"{"types":["books"],"books":{"delete":[2],"attributes":{"2":{"title":"T"}}}}"#, "not created or updated",
            ChangeSetError.Code.malformed
        ),
        (#"{"types":["books"],"books":{"delete":["2"]}}"#, "not a valid integer key", ChangeSetError.Code.invalidKey),
        (
            #"{"types":["books"],"books":{"create":[1],"attributes":{"1":{"id":2,"title":"T","price":1,"in_stock":true}}}}"#,
            "differs from the id", ChangeSetError.Code.unknownField
        ),
        (
            #"{"types":["authors"],"authors":{"create":["a"],"attributes":{"a":{"name":"N","born":"yesterday"}}}}"#,
            "RFC 3339", ChangeSetError.Code.invalidValue
        ),
        (
            #"{"types":["authors"],"authors":{"create":["a"],"attributes":{"a":{"name":"N","photo":"not base64!"}}}}"#,
            "base64", ChangeSetError.Code.invalidValue
        ),
        (
            #"{"types":["authors"],"authors":{"create":[""],"attributes":{"":{"name":"N"}}}}"#, "not a valid text key",
            ChangeSetError.Code.invalidKey
        ),
        (
            #"{"types":["books"],"books":{"create":[1],"attributes":{"1":{"title":["T"],"price":1,"in_stock":true}}}}"#,
            "got array", ChangeSetError.Code.invalidValue
        ),
    ])
    func rejectsWithACodeAndAClearMessage(json: String, message: String, code: ChangeSetError.Code) throws {
        let changeSet = try JSONDecoder().decode(ChangeSet.self, from: Data(json.utf8))
        #expect { try schema.validate(changeSet) } throws: { error in
            (error as? ChangeSetError)?.code == code && "\(error)".contains(message)
        }
    }

    /// PostgreSQL cannot store U+0000, so neither store takes it from a commit or a push; a reader
    /// still takes it (what a store already holds is served). Found by scripts/suites/hostile-clients.sh.
    @Test(arguments: [
        #"{"types":["books"],"books":{"create":[1],"attributes":{"1":{"title":"a\u0000b","price":1,"in_stock":true}}}}"#,
        #"{"types":["authors"],"authors":{"create":["le\u0000guin"],"attributes":{"le\u0000guin":{"name":"U"}}}}"#,
    ])
    func commitsAndPushesRefuseNUL(json: String) throws {
        let changeSet = try ChangeSet(json: JSONParser.parse(Array(json.utf8)))
        #expect(try schema.validate(changeSet).count == 1)
        #expect { try schema.validateCommit(changeSet) } throws: { "\($0)".contains("cannot hold U+0000") }
        let pushed = json.replacingOccurrences(of: "[1]", with: "[-1]").replacingOccurrences(
            of: #""1":"#, with: #""-1":"#)
        let push = PushedChangeSet(id: "p", changeSet: try ChangeSet(json: JSONParser.parse(Array(pushed.utf8))))
        #expect { try schema.validatePush(push) } throws: { "\($0)".contains("cannot hold U+0000") }
    }

    /// A text key is at most 1,024 UTF-8 bytes, exactly (PROTOCOL.md §4).
    @Test func textKeysEndAt1024Bytes() {
        #expect(KeyType.text.accepts(.string(String(repeating: "é", count: 512))))
        #expect(!KeyType.text.accepts(.string(String(repeating: "é", count: 512) + "x")))
        #expect(!KeyType.text.accepts(""))
    }

    /// A pushed row of an integer-keyed type takes a negative temporary key: 0 is not one.
    @Test func aPushCannotCreateKeyZero() throws {
        let json =
            #"{"types":["books"],"books":{"create":[0],"attributes":{"0":{"title":"T","price":1,"in_stock":true}}}}"#
        let push = PushedChangeSet(id: "p", changeSet: try ChangeSet(json: JSONParser.parse(Array(json.utf8))))
        #expect { try schema.validatePush(push) } throws: { ($0 as? ChangeSetError)?.code == .invalidKey }
    }

    @Test func ignoresRevisionAndAcceptsMatchingKeyAttribute() throws {
        let json =
            #"{"types":["books"],"books":{"update":[4],"attributes":{"4":{"id":4,"revision":99,"title":"T","price":1,"in_stock":false}}}}"#
        let changes = try schema.validate(JSONDecoder().decode(ChangeSet.self, from: Data(json.utf8)))
        #expect(changes[0].updates == [RowValues(key: 4, values: ["T", .null, .double(1), false, .null])])
    }

    @Test func validatesWholeRowsForBulkLoads() throws {
        let books = try #require(schema.type(named: "books"))
        #expect(try books.validateRow(["id": 3, "title": "T", "price": 2.5, "in_stock": true]).key == 3)
        #expect { try books.validateRow(["title": "T", "price": 2.5, "in_stock": true]) } throws: {
            ($0 as? ChangeSetError)?.code == .invalidKey
        }
    }

    @Test(arguments: [
        ("2026-11-22T10:15:00Z", true), ("2026-11-22t10:15:00.250+01:00", true), ("2024-02-29 23:59:60-05:30", true),
        ("2023-02-29T00:00:00Z", false), ("2026-13-01T00:00:00Z", false), ("2026-11-22T24:00:00Z", false),
        ("2026-11-22T10:15:00", false), ("2026-11-22T10:15:00.Z", false), ("2026-11-22T10:15:00+0100", false),
        ("", false),
    ])
    func rfc3339(text: String, valid: Bool) {
        #expect(RFC3339.isValid(text) == valid)
    }

    @Test func keysParseOnlyInCanonicalForm() {
        #expect(KeyType.integer.key(from: "42") == 42)
        #expect(KeyType.integer.key(from: "-7") == -7)
        #expect(KeyType.integer.key(from: "+7") == nil)
        #expect(KeyType.integer.key(from: "07") == nil)
        #expect(KeyType.integer.key(from: "x") == nil)
        #expect(KeyType.text.key(from: "abc") == "abc")
        #expect(KeyType.text.key(from: "") == nil)
    }
}

/// The scope rules of a schema (`ScopeDeclaration`), and what a reader of some scope values sees
/// of a change set.
@Suite struct ScopeRuleTests {
    @Test func aScopedTypeNeedsAScopeAndAFieldOfItsType() throws {
        try Fixtures.clubsSchema.validate()
        func refusal(_ change: (inout DatasetSchema) -> Void) -> String? {
            var schema = Fixtures.clubsSchema
            change(&schema)
            do {
                try schema.validate()
                return nil
            } catch let error as SchemaError {
                return error.code == .invalidScope ? error.description : "another code: \(error)"
            } catch {
                return "\(error)"
            }
        }
        #expect(refusal { $0.scope = nil }?.contains("declares no scope") == true)
        #expect(refusal { $0.types[2].scopedBy = "title" }?.contains("is text, but scope team holds integer") == true)
        #expect(refusal { $0.types[2].scopedBy = "venue_id" }?.contains("neither its key nor a field") == true)
        #expect(refusal { $0.types[2].scopedBy = "nothing" }?.contains("neither its key nor a field") == true)
        #expect(refusal { $0.types[0].scopedBy = nil } == nil, "a scoped type may reference a shared one")
        #expect(
            refusal { $0.types[3].scopedBy = nil }?.contains("shared type tickets references scoped type teams") == true
        )
        #expect(refusal { $0.scope?.name = "Team" }?.contains("scope name") == true)
        // A dataset without a scope reads and writes as it always did.
        let plain = try JSONEncoder.stable().encode(Fixtures.catalogSchema)
        #expect(!String(decoding: plain, as: UTF8.self).contains("scope"))
    }

    @Test func aGrantComparesValuesByTheirKeyForm() {
        let grant = ScopeGrant.only([.int(42), .string("7"), .null])
        #expect(grant.includes(.string("42")) && grant.includes(.int(7)) && !grant.includes(.int(8)))
        #expect(grant.sortedValues(as: .integer) == [7, 42] && grant.sortedValues(as: .text) == ["42", "7"])
        #expect(ScopeGrant.all.includes(.int(1)) && ScopeGrant.all.sortedValues(as: .integer) == nil)
    }

    @Test func aScopeListHasOneSpellingThatRoundTripsEveryValue() throws {
        #expect(ScopeList([.int(43), .int(42), .int(43), .null]).parameter == "42,43")
        #expect(try ScopeList(parameter: "42,43", as: .integer).values == [.int(42), .int(43)])
        #expect(try ScopeList(parameter: "", as: .integer).values == [])
        let texts = ScopeList([.string("b,c"), .string("a%2C"), .string("Z")])
        #expect(texts.parameter == "Z,a%252C,b%2Cc")
        #expect(try ScopeList(parameter: texts.parameter, as: .text) == texts)
        for refused in ["43,42", "42,42", "042", "x", "1,", ",1", "1,,2"] {
            #expect(throws: SchemaError.self, "\(refused)") { try ScopeList(parameter: refused, as: .integer) }
        }
        #expect(throws: SchemaError.self) { try ScopeList(parameter: "b,a", as: .text) }
        #expect(ScopeList([.int(1), .int(2)]).grant == .only([.int(2), .int(1)]))
    }

    @Test func aChangeSetShowsAReaderItsScopesRowsAndWhereOthersLeftOrCame() throws {
        let changeSet = ChangeSet(
            revision: 9,
            changes: [
                TypeChanges(type: "venues", update: [1], attributes: ["1": ["name": "Hall", "revision": 9]]),
                TypeChanges(
                    type: "events", create: [104], update: [201, 102, 103], delete: [105, 305],
                    attributes: [
                        "104": ["team_id": 1, "title": "a", "venue_id": .null, "revision": 9],
                        "201": ["team_id": 1, "title": "in", "venue_id": .null, "revision": 9],
                        "102": ["team_id": 2, "title": "out", "venue_id": .null, "revision": 9],
                        "103": ["team_id": 1, "title": "stays", "venue_id": .null, "revision": 9],
                    ],
                    from: ["201": 2, "102": 1, "105": 1, "305": 3]),
            ])
        let one = try #require(changeSet.visible(to: .only([.int(1)]), in: Fixtures.clubsSchema))
        #expect(one["venues"] == changeSet["venues"] && one.revision == 9)
        #expect(one["events"]?.create == [104, 201] && one["events"]?.update == [103])
        #expect(one["events"]?.delete == [102, 105] && one["events"]?.from == [:])
        #expect(Set(one["events"]?.attributes.keys.map { $0 } ?? []) == ["104", "201", "103"])
        let three = try #require(changeSet.visible(to: .only([.int(3)]), in: Fixtures.clubsSchema))
        #expect(three["events"]?.delete == [305] && three["events"]?.create == [] && three["venues"] != nil)
        let onlyEvents = ChangeSet(revision: 9, changes: [changeSet["events"]!])
        #expect(onlyEvents.visible(to: .only([.int(4)]), in: Fixtures.clubsSchema) == nil, "a gap, not a change set")
        #expect(onlyEvents.visible(to: .all, in: Fixtures.clubsSchema) == onlyEvents)
        // `from` survives the wire for global readers.
        let json = changeSet.jsonBytes()
        #expect(try ChangeSet(json: JSONParser.parse(json)) == changeSet)
        #expect(String(decoding: json, as: UTF8.self).contains(#""from":{"201":2,"102":1,"105":1,"305":3}"#))
    }
}
