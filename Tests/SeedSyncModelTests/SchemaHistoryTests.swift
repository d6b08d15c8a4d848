import Foundation
import SeedSyncModel
import SeedSyncTesting
import Testing

/// Schema versions: which upgrades are accepted and which refused (with what to do instead),
/// and every row and change set read in any version, whatever version wrote it.
@Suite struct SchemaHistoryTests {
    static let v3 = Fixtures.catalogSchema
    static let v4 = Fixtures.catalogSchemaV4

    static func history() throws -> SchemaHistory {
        try SchemaHistory(v3, revision: 0).upgrading(to: v4, renaming: Fixtures.catalogRenames, at: 10).history
    }

    @Test func anAdditiveUpgradeListsItsChanges() throws {
        let upgrade = try SchemaHistory(Self.v3).upgrading(to: Self.v4, renaming: Fixtures.catalogRenames, at: 10)
        #expect(
            upgrade.changes.map(\.description) == [
                "authors.name renamed to full_name", "authors.photo dropped", "authors.country added",
                "books.subtitle added", "books.publisher_id added", "type publishers added",
            ])
        #expect(upgrade.history.versions.map(\.number) == [3, 4] && upgrade.version.revision == 10)
        #expect(upgrade.history.version(writing: 10).number == 3 && upgrade.history.version(writing: 11).number == 4)
        // A stored history is read back through the same rules.
        #expect(try SchemaHistory(versions: upgrade.history.versions) == upgrade.history)
    }

    /// Each refusal names the change and says what to do instead.
    @Test(arguments: [
        ("drop type", SchemaUpgradeError.Code.typeDropped, "a type cannot be dropped"),
        ("key", .keyChanged, "add a new type with the new key"),
        ("field type", .fieldChanged, "a field's type cannot change"),
        ("nullability", .fieldChanged, "changes from not nullable to nullable"),
        ("reference", .fieldChanged, "a reference can only come with a new field"),
        ("added not null", .missingDefault, "Make it nullable or give it a default"),
        ("dropped not null", .missingDefault, "Give it a default first"),
        ("added reference with a default", .invalidSchema, "cannot have a default"),
        ("no change", .noChange, "nothing to upgrade"),
    ])
    func refusedChangesSayWhatToDoInstead(change: String, code: SchemaUpgradeError.Code, message: String) throws {
        var schema = Self.v3
        schema.schemaVersion = 4
        switch change {
        case "drop type": schema.types.removeLast()
        case "key": schema.types[1].primaryKey.name = "isbn"
        case "field type": schema.types[1].fields[2].type = .text
        case "nullability": schema.types[1].fields[0].nullable = true
        case "reference": schema.types[1].fields[4].references = "books"
        case "added not null": schema.types[1].fields.append(Field(name: "isbn", type: .text))
        case "dropped not null": schema.types[1].fields.remove(at: 0)
        case "added reference with a default":
            schema.types[1].fields.append(Field(name: "sequel", type: .integer, references: "books", default: 1))
        default: break
        }
        #expect {
            try SchemaHistory(Self.v3).upgrading(to: schema, at: 1)
        } throws: { error in
            (error as? SchemaUpgradeError)?.code == code && "\(error)".contains(message)
        }
    }

    @Test func versionsDatasetsAndRenamesAreChecked() throws {
        let history = SchemaHistory(Self.v3)
        var same = Self.v4
        same.schemaVersion = 3
        #expect(throws: SchemaUpgradeError.self) { try history.upgrading(to: same, at: 1) }
        var other = Self.v4
        other.dataset = "other"
        #expect { try history.upgrading(to: other, at: 1) } throws: {
            ($0 as? SchemaUpgradeError)?.code == .otherDataset
        }
        for rename in ["authors.nom=full_name", "authors.name=nom", "shelves.name=full_name"] {
            #expect {
                try history.upgrading(to: Self.v4, renaming: [FieldRename(rename)!], at: 1)
            } throws: { ($0 as? SchemaUpgradeError)?.code == .invalidRename && "\($0)".contains(rename) }
        }
        // Without the rename stated, `name` is dropped (not nullable, no default: refused): never guessed.
        #expect { try history.upgrading(to: Self.v4, at: 1) } throws: {
            ($0 as? SchemaUpgradeError)?.code == .missingDefault && "\($0)".contains("authors.name is dropped")
        }
        #expect(FieldRename("events.title=name") == FieldRename(type: "events", from: "title", to: "name"))
        #expect(FieldRename("events.title") == nil && FieldRename("title=name") == nil)
    }

    @Test func aDroppedFieldsNameIsNeverGivenToAnother() throws {
        var v5 = Self.v4
        v5.schemaVersion = 5
        v5.types[0].fields.append(Field(name: "photo", type: .text, nullable: true))
        #expect { try Self.history().upgrading(to: v5, at: 20) } throws: {
            ($0 as? SchemaUpgradeError)?.code == .nameReused && "\($0)".contains("authors.photo")
        }
        v5.types[0].fields.removeLast()
        v5.types[0].fields[1].name = "photo"
        #expect {
            try Self.history().upgrading(to: v5, renaming: [FieldRename("authors.born=photo")!], at: 20)
        } throws: {
            ($0 as? SchemaUpgradeError)?.code == .nameReused
        }
    }

    /// A change set written in version 3 read in version 4, and one written in 4 read in 3.
    @Test func changeSetsReadInEitherVersion() throws {
        let history = try Self.history()
        let old = try VersionProjection(history: history, version: 3)
        let new = try VersionProjection(history: history, version: 4)
        let written3 = ChangeSet(
            revision: 5,
            changes: [
                TypeChanges(
                    type: "authors", create: ["le-guin"],
                    attributes: ["le-guin": ["name": "Ursula", "born": .null, "photo": "AAEC", "revision": 5]])
            ])
        #expect(old.servesAsWritten(revision: 5) && !new.servesAsWritten(revision: 5))
        #expect(
            try new.project(written3)["authors"]?.attributes["le-guin"]
                == ["full_name": "Ursula", "born": .null, "country": "unknown", "revision": 5])
        let written4 = ChangeSet(
            revision: 12,
            changes: [
                TypeChanges(
                    type: "authors", update: ["le-guin"],
                    attributes: ["le-guin": ["full_name": "U. K.", "born": .null, "country": "US", "revision": 12]]),
                TypeChanges(type: "publishers", create: [1], attributes: ["1": ["name": "Ace", "revision": 12]]),
            ])
        let read3 = try old.project(written4)
        #expect(read3.types == ["authors"], "a type version 3 lacks is left out")
        #expect(
            read3["authors"]?.attributes["le-guin"] == ["name": "U. K.", "born": .null, "photo": .null, "revision": 12])
        // A row that lacks a field its own version has was changed under the store.
        var broken = written4
        broken.changes[0].attributes["le-guin"]?["country"] = nil
        #expect { try new.project(broken) } throws: {
            ($0 as? SyncStoreError)?.code == .schemaMismatch && "\($0)".contains("country")
        }
        #expect(throws: SyncStoreError.self) { try VersionProjection(history: history, version: 9) }
    }

    @Test func pagesAndSchemasReadInAnOlderVersion() throws {
        let history = try Self.history()
        let old = try VersionProjection(history: history, version: 3)
        let page = SnapshotPage(
            type: "authors", revision: 12, columns: ["code", "full_name", "born", "country", "revision"],
            rows: [["le-guin", "Ursula", .null, "US", 12]], next: .null)
        let read = try old.project(page)
        #expect(read.columns == ["code", "name", "born", "photo", "revision"])
        #expect(read.rows == [["le-guin", "Ursula", .null, .null, 12]])
        let info = old.project(
            SchemaInfo(schema: Self.v4, revision: 12, minRevision: 0, rowCounts: ["authors": 1, "publishers": 2]))
        #expect(info.schemaVersion == 3 && info.types == Self.v3.types && info.rowCounts == ["authors": 1])
        #expect(info.servedVersions == [3, 4])
    }

    /// An old client's update keeps the fields it does not know; its create gets their defaults.
    @Test func pushesOfAnOlderVersionBecomePartialUpdates() throws {
        let old = try VersionProjection(history: try Self.history(), version: 3)
        let pushed = PushedChangeSet(
            id: "old-app",
            changeSet: ChangeSet(changes: [
                TypeChanges(
                    type: "authors", create: ["new"], update: ["le-guin"],
                    attributes: [
                        "new": ["name": "New", "born": .null, "photo": .null],
                        "le-guin": ["name": "Renamed", "born": .null, "photo": "AAEC", "revision": 7],
                    ])
            ]))
        let translated = try old.newest(pushed) { type, key in
            #expect(type.name == "authors" && key == "le-guin")
            return ["full_name": "Ursula", "born": .null, "country": "US"]
        }
        let attributes = try #require(translated.changeSet["authors"]?.attributes)
        #expect(attributes["new"] == ["full_name": "New", "born": .null, "country": "unknown"])
        #expect(attributes["le-guin"] == ["full_name": "Renamed", "born": .null, "country": "US", "revision": 7])
        // Checked against the client's own version first: its field names in the message.
        var wrong = pushed
        wrong.changeSet.changes[0].attributes["new"]?["full_name"] = "New"
        #expect { try old.newest(wrong) { _, _ in nil } } throws: {
            ($0 as? ChangeSetError)?.code == .unknownField && "\($0)".contains("full_name")
        }
    }
}
