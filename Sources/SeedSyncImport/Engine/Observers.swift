import Foundation
import GRDB
import SeedSyncModel
import SeedSyncSeed

/// The observers of a ``SyncEngine`` and what they are told, after each commit.
///
/// Every ``ImportEvent`` of the engine's runs, and each local write, comes here in order (one
/// serial queue). Changes gather until the transaction that made them is over (a `progress`
/// event ends a batch of change sets; a push's results, an install, a replacement or a migration
/// are a transaction each), then each type observer gets one ``ObservedChanges`` and each row
/// observer whose row may have changed reads it (one read of the database for all of them) and
/// gets it when it differs from what it last got. Rows are read on a connection of the observers'
/// own, kept open (a WAL reader: it never waits for the importer's writes), opened again after the
/// file was installed, replaced or migrated. A read that fails leaves the rows to be read again
/// at the next change, so no observer keeps a value it was never told is stale.
actor Observers {
    private struct RowObserver {
        var type: String
        var key: JSONValue
        var last: ObservedRow?
        /// Whether the app marked the row as being edited (see ``SyncEngine/observe(type:key:editing:)``).
        var editing: Bool
        var continuation: AsyncStream<ObservedRow>.Continuation
    }

    private struct Reader {
        var queue: DatabaseQueue
        var schema: DatasetSchema
        var outbox: Outbox
    }

    private let database: String
    private var reader: Reader?
    private var rows: [UUID: RowObserver] = [:]
    private var types: [UUID: (type: String, continuation: AsyncStream<ObservedChanges>.Continuation)] = [:]
    private var pending: [String: ObservedChanges] = [:]
    private var reloadAll = false

    init(database: String) {
        self.database = database
    }

    // MARK: - Observers

    func add(_ id: UUID, type: String, _ continuation: AsyncStream<ObservedChanges>.Continuation) {
        types[id] = (type, continuation)
    }

    /// Adds a row observer and gives it the row as it is now.
    func add(
        _ id: UUID, type: String, key: JSONValue, editing: Bool, _ continuation: AsyncStream<ObservedRow>.Continuation
    ) async {
        rows[id] = RowObserver(type: type, key: key, last: nil, editing: editing, continuation: continuation)
        await refresh([id])
    }

    /// The rows observers mark as being edited, by their current keys.
    func rowsBeingEdited() -> Set<RowID> {
        Set(
            rows.values.filter(\.editing).compactMap { row in row.key.keyString.map { RowID(type: row.type, key: $0) } }
        )
    }

    func remove(_ id: UUID) {
        rows[id] = nil
        types[id] = nil
    }

    /// Ends every observation (the engine stopped) and closes the connection.
    func finish() {
        for observer in rows.values { observer.continuation.finish() }
        for observer in types.values { observer.continuation.finish() }
        rows = [:]
        types = [:]
        closeReader()
    }

    /// The observers' connection, opened when needed.
    private func openReader() throws -> Reader {
        if let reader { return reader }
        let schema = try SeedFile.read(database) { file in try file.metadata().schema }
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        let opened = Reader(
            queue: try DatabaseQueue(path: database, configuration: configuration), schema: schema,
            outbox: Outbox(schema: schema))
        reader = opened
        return opened
    }

    private func closeReader() {
        try? reader?.queue.close()
        reader = nil
    }

    // MARK: - Changes

    /// Gathers what `event` changed, and tells the observers when its transaction is over.
    func handle(_ event: ImportEvent) async {
        switch event {
        case .applied(let changeSet):
            for (type, keys) in changeSet.types {
                pending[type, default: ObservedChanges()].inserted += keys.created
                pending[type, default: ObservedChanges()].updated += keys.updated
                pending[type, default: ObservedChanges()].deleted += keys.deleted
            }
        case .pushed(_, _, let keys):
            for (type, map) in keys {
                for (temporary, real) in map {
                    guard let number = Int64(temporary) else { continue }
                    pending[type, default: ObservedChanges()].rekeyed[.int(number)] = real
                }
            }
        case .conflict, .rejected:
            reloadAll = true
        case .installed, .replaced, .migrated:
            // Another file, or another schema: read from it from now on.
            closeReader()
            reloadAll = true
            await flush()
        case .progress, .caughtUp, .finished:
            await flush()
        default:
            break
        }
    }

    /// A local write committed these row changes.
    func handle(_ changes: [RowChange]) async {
        guard let schema = try? openReader().schema else { return }
        for change in changes {
            guard let type = schema.type(named: change.row.type),
                let key = type.primaryKey.type.key(from: change.row.key)
            else { continue }
            switch change.kind {
            case .inserted: pending[type.name, default: ObservedChanges()].inserted.append(key)
            case .updated: pending[type.name, default: ObservedChanges()].updated.append(key)
            case .deleted: pending[type.name, default: ObservedChanges()].deleted.append(key)
            }
        }
        await flush()
    }

    /// Tells the observers what the gathered changes are, then forgets them.
    private func flush() async {
        guard reloadAll || !pending.isEmpty else { return }
        let changes = pending
        let everything = reloadAll
        pending = [:]
        reloadAll = false
        for observer in types.values {
            var observed = changes[observer.type] ?? ObservedChanges()
            observed.isReload = everything
            if everything || changes[observer.type] != nil { observer.continuation.yield(observed) }
        }
        var stale: [UUID] = []
        for (id, observer) in rows {
            guard everything || changes[observer.type] != nil else { continue }
            if let real = changes[observer.type]?.rekeyed[observer.key] { rows[id]?.key = real }
            stale.append(id)
        }
        await refresh(stale)
    }

    /// Reads the rows of `ids` (one read for all) and gives each observer its row when it changed.
    private func refresh(_ ids: [UUID]) async {
        let wanted = ids.compactMap { id in rows[id].map { (id, RowID(type: $0.type, key: $0.key.keyString ?? "")) } }
        guard !wanted.isEmpty else { return }
        let found: [(UUID, [String: JSONValue]?)]
        do {
            let reader = try openReader()
            found = try await reader.queue.read { [outbox = reader.outbox] db in
                try wanted.map { id, row in (id, try outbox.localRow(row, in: db)) }
            }
        } catch {
            // Read again at the next change: forget what they were told.
            for (id, _) in wanted { rows[id]?.last = nil }
            closeReader()
            return
        }
        for (id, fields) in found {
            guard let observer = rows[id] else { continue }
            let row = ObservedRow(key: observer.key, fields: fields)
            guard row != observer.last else { continue }
            rows[id]?.last = row
            observer.continuation.yield(row)
        }
    }
}
