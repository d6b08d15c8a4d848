import Foundation

/// What a store serves of its ``SchemaHistory``: the history and a projection to each version,
/// made once per history. Stores keep one and replace it whole when a newer version shows.
package struct ServedVersions: Sendable {
    package let history: SchemaHistory
    /// The stored versions after the history that cannot be read, with the reason (see
    /// ``SchemaHistory/read(_:)``): unavailable, and named so when asked for.
    package let unreadable: [UnreadableVersion]
    private let projections: [Int: VersionProjection]

    package init(_ history: SchemaHistory, unreadable: [UnreadableVersion] = []) {
        self.history = history
        self.unreadable = unreadable
        let lineages = history.lineagesByType()
        projections = Dictionary(
            uniqueKeysWithValues: history.versions.map {
                ($0.number, try! VersionProjection(history: history, version: $0.number, lineages: lineages))
            })
    }

    /// The versions of a store's stored `rows`, oldest first (``SchemaHistory/read(_:)``).
    ///
    /// - Throws: the first version when not even it can be read: nothing can be served.
    package static func reading(_ rows: [StoredVersion]) throws(UnreadableVersion) -> ServedVersions {
        let (history, unreadable) = SchemaHistory.read(rows)
        guard let history else {
            throw unreadable.first ?? UnreadableVersion(number: 1, reason: "there is none")
        }
        return ServedVersions(history, unreadable: unreadable)
    }

    /// The newest version's schema: the shape of the stored rows.
    package var schema: DatasetSchema { history.newest.schema }

    /// The newest version number stored, readable or not: what a store's state read names.
    package var storedNewest: Int { unreadable.last?.number ?? history.newest.number }

    /// The projection to `version`, or to the newest when `nil`.
    ///
    /// - Throws: ``SyncStoreError`` `unknownSchemaVersion` for a version the history lacks, or
    ///   one stored that cannot be read (its message says why).
    package func projection(_ version: Int?) throws(SyncStoreError) -> VersionProjection {
        let number = version ?? history.newest.number
        guard let projection = projections[number] else {
            if let broken = unreadable.first(where: { $0.number == number }) {
                throw .unreadableSchemaVersion(number, reason: broken.reason)
            }
            throw .unknownSchemaVersion(number, kept: history.versions.map(\.number))
        }
        return projection
    }

    /// The versions as `GET /v1/schema` lists them.
    package var kept: [SchemaInfo.KeptVersion] {
        history.versions.map {
            SchemaInfo.KeptVersion(
                schemaVersion: $0.number, revision: $0.revision, renames: $0.renames.isEmpty ? nil : $0.renames)
        }
    }
}

/// A value shared between tasks, read and replaced under a lock.
package final class LockedValue<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    package init(_ value: Value) { self.value = value }

    package func get() -> Value { lock.withLock { value } }

    package func set(_ newValue: Value) { lock.withLock { value = newValue } }

    /// Replaces the value with `newValue` when `isNewer(newValue, value)`, in one step.
    package func set(_ newValue: Value, ifNewerThanCurrent isNewer: (Value, Value) -> Bool) {
        lock.withLock { if isNewer(newValue, value) { value = newValue } }
    }
}
