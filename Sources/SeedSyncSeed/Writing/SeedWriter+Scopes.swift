import Foundation
import GRDB
package import SeedSyncModel
import SeedSyncSQL

/// Seeds of one scope value each, cut from a complete work file (`seed-build --scope`, `--every-scope`).
///
/// The work file holds every row at one revision; each scope value's seed is a new work file at
/// that revision, with `scopes` set to that value, holding the shared rows and the rows of that
/// value, copied page by page in key order, then finished as any seed (``finish(to:)``). An
/// index on each scoped type's scope column (dropped again by ``finish(to:)``) lets each value
/// read its own rows alone: the rows are read once over all the values, the shared ones once per
/// value. A seed so cut holds exactly what `seed-build` with a token of that value alone would
/// download at that revision, and is byte for byte that seed.
extension SeedWriter {
    /// Indexes each scoped type's table by scope value, and returns every scope value a row holds,
    /// in key order.
    package func scopeValues() async throws -> [JSONValue] {
        guard let scope = schema.scope else { return [] }
        return try await Self.onFile(path) { [schema] in
            try await queue.write { db in
                var values: [JSONValue] = []
                var seen: Set<String> = []
                for type in schema.types where type.isScoped {
                    let table = TableSQL(type: type)
                    try db.execute(sql: table.createScopeIndex)
                    for value in try DatabaseValue.fetchAll(db, sql: table.scopeValues) {
                        let json = ValueMapping.jsonValue(value, as: scope.type.fieldType)
                        if let key = json.keyString, seen.insert(key).inserted { values.append(json) }
                    }
                }
                return values.sorted(by: JSONValue.keyPrecedes)
            }
        }
    }

    /// Writes the seed of scope `value` as a new work file at `path`, complete and ready for
    /// ``finish(to:)``, `pageSize` rows per transaction; call ``scopeValues()`` first (it makes
    /// the index the reads use).
    ///
    /// - Throws: ``SeedError`` when the dataset has no scope or `path` exists.
    package func writeScope(_ value: JSONValue, at path: String, pageSize: Int) async throws -> SeedWriter {
        guard schema.scope != nil else {
            throw SeedError(.unusable, "\(schema.dataset) declares no scope: there is no seed per scope to build")
        }
        let part = try await SeedWriter.create(at: path, schema: schema, revision: try revision(), scopes: [value])
        do {
            for type in schema.types { try await copy(type, of: value, into: part, pageSize: pageSize) }
            try await part.markComplete()
        } catch {
            try? part.close()
            DatabaseFiles(path).remove()
            throw error
        }
        return part
    }

    /// Copies the rows of `type` that a reader of `value` reads into `part`, a page per transaction.
    private func copy(_ type: EntityType, of value: JSONValue, into part: SeedWriter, pageSize: Int) async throws {
        let table = TableSQL(type: type)
        let scopes = ScopeGrant.only([value]).argument(for: type, in: schema)
        var after: DatabaseValue?
        repeat {
            let rows = try await queue.read { [after] db in
                var arguments: [DatabaseValue] = after.map { [$0] } ?? []
                if let scopes { arguments.append(scopes) }
                arguments.append(pageSize.databaseValue)
                return try Row.fetchAll(
                    db, sql: table.snapshot(after: after != nil, scoped: scopes != nil),
                    arguments: StatementArguments(arguments)
                ).map { Array($0.databaseValues) }
            }
            guard !rows.isEmpty else { return }
            try await Self.onFile(part.path) {
                try await part.queue.write { db in
                    let insert = try db.cachedStatement(sql: table.insert)
                    for row in rows { try insert.execute(arguments: StatementArguments(row)) }
                }
            }
            after = rows.count == pageSize ? rows.last?.first : nil
        } while after != nil
    }

    /// Every type's download is complete.
    private func markComplete() async throws {
        try await Self.onFile(path) {
            try await queue.write { db in try db.execute(sql: "UPDATE \(SeedFormat.buildTable) SET complete = 1") }
        }
    }
}
