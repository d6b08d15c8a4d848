import Foundation
package import SeedSyncModel

/// What a store serves of its `SchemaHistory`: the history and a projection to each version,
/// each made once, when a request first asks for its version (a store of many versions opens at
/// the cost of reading them, and a request costs the same whatever their number). Stores keep one
/// and replace it whole when a newer version shows.
package struct ServedVersions: Sendable {
    package let history: SchemaHistory
    /// The stored versions after the history that cannot be read, with the reason (see
    /// `SchemaHistory.read(_:)`): unavailable, and named so when asked for.
    package let unreadable: [UnreadableVersion]
    private let projections: Projections

    package init(_ history: SchemaHistory, unreadable: [UnreadableVersion] = []) {
        self.history = history
        self.unreadable = unreadable
        projections = Projections(history)
    }

    /// The versions of a store's stored `rows`, oldest first (`SchemaHistory.read(_:)`).
    ///
    /// - Throws: the first version when not even it can be read: nothing can be served.
    package static func reading(_ rows: [StoredVersion]) throws(UnreadableVersion) -> ServedVersions {
        let (history, unreadable) = SchemaHistory.read(rows)
        guard let history else {
            throw unreadable.first ?? UnreadableVersion(number: 1, reason: "there is none")
        }
        return ServedVersions(history, unreadable: unreadable)
    }

    /// Refuses to build an upgrade on versions one of which cannot be read.
    ///
    /// - Throws: `SchemaUpgradeError` `invalidHistory` naming the version.
    package func refuseUnreadable() throws(SchemaUpgradeError) {
        guard let broken = unreadable.first else { return }
        throw SchemaUpgradeError(
            .invalidHistory,
            "stored schema version \(broken.number) cannot be read (\(broken.reason)); fix or remove it before upgrading"
        )
    }

    /// The newest version's schema: the shape of the stored rows.
    package var schema: DatasetSchema { history.newest.schema }

    /// The newest version number stored, readable or not: what a store's state read names.
    package var storedNewest: Int { unreadable.last?.number ?? history.newest.number }

    /// The projection to `version`, or to the newest when `nil`.
    ///
    /// - Throws: `SyncStoreError` `unknownSchemaVersion` for a version the history lacks, or
    ///   one stored that cannot be read (its message says why).
    package func projection(_ version: Int?) throws(SyncStoreError) -> VersionProjection {
        let number = version ?? history.newest.number
        guard let projection = projections.projection(number) else {
            if let broken = unreadable.first(where: { $0.number == number }) {
                throw .unreadableSchemaVersion(number, reason: broken.reason)
            }
            throw .unknownSchemaVersion(number, kept: history.versions.map(\.number))
        }
        return projection
    }

    /// The projections made so far, and the history's lineages they share, under a lock.
    private final class Projections: @unchecked Sendable {
        private let history: SchemaHistory
        private let numbers: Set<Int>
        private let lock = NSLock()
        private var lineages: [String: [FieldLineage]]?
        private var made: [Int: VersionProjection] = [:]

        init(_ history: SchemaHistory) {
            self.history = history
            numbers = Set(history.versions.map(\.number))
        }

        /// The projection to version `number`, made on first use; `nil` when the history lacks it.
        func projection(_ number: Int) -> VersionProjection? {
            guard numbers.contains(number) else { return nil }
            return lock.withLock {
                if let projection = made[number] { return projection }
                let lineages = self.lineages ?? history.lineagesByType()
                self.lineages = lineages
                let projection = try! VersionProjection(history: history, version: number, lineages: lineages)
                made[number] = projection
                return projection
            }
        }
    }

    /// The versions as `GET /v1/schema` lists them.
    package var kept: [SchemaInfo.KeptVersion] {
        history.versions.map {
            SchemaInfo.KeptVersion(
                schemaVersion: $0.number, revision: $0.revision, renames: $0.renames.isEmpty ? nil : $0.renames)
        }
    }
}
