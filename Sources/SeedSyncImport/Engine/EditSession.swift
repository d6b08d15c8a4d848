import Foundation

/// A user's edit in progress in a ``SyncEngine``: while it is open the engine applies nothing, so
/// no server change lands on the rows the user is looking at, and nothing competes with the edit
/// for the database.
///
/// ``SyncEngine/beginEdit()`` returns once the engine's current transaction has ended (a batch
/// of change sets being applied ends at the next change set, its rest in a later transaction). A run
/// catching up keeps what it downloaded and waits before its next transaction until the last
/// session has ended, so sessions that come and go do not hold the catch-up back; before its
/// catch-up (the install check, an install, a replacement by a newer seed, a migration) a run is
/// one step, which the session waits for. A 410 recovery copies the seed or downloads a snapshot
/// during sessions; only its replacement of the database waits for them to end. No run starts
/// while a session is open.
/// The edit's changes are written by ``commit(_:)``, in one transaction and one local change set;
/// the engine then pushes them at once (a catch-up from the database's revision, without a whole
/// run once one has installed the database; see ``SyncEngine/write(_:)``). ``cancel()`` writes nothing. Either ends the
/// session and lets the engine go on (unless the app paused it, or other sessions are open).
///
/// ```swift
/// let edit = await engine.beginEdit()
/// // the user edits the form; server changes wait
/// try await edit.commit { changes in try changes.update("events", key: 5, ["title": title]) }
/// ```
public final class EditSession: Sendable {
    private let engine: SyncEngine
    /// The session's name in the engine, which keeps whether it is open.
    private let id: UUID

    init(engine: SyncEngine, id: UUID) {
        self.engine = engine
        self.id = id
    }

    /// Writes the edit (see ``SeedImporter/write(_:)``) and ends the session. When `body` or
    /// the write fails, nothing is written and the session stays open: commit again, or cancel.
    ///
    /// - Throws: ``ImportError/Code/invalidChangeSet`` when the session has ended already, else
    ///   what ``SyncEngine/write(_:)`` throws.
    @discardableResult
    public func commit<T: Sendable>(_ body: @escaping @Sendable (LocalChanges) throws -> T) async throws -> T {
        guard !(await hasEnded) else {
            throw ImportError(.invalidChangeSet, "the edit session has ended: begin another")
        }
        let result = try await engine.writeLocally(body)
        await engine.endEdit(id, committed: true)
        return result
    }

    /// Ends the session without writing anything.
    public func cancel() async {
        await engine.endEdit(id)
    }

    /// Whether ``commit(_:)`` or ``cancel()`` ended the session.
    public var hasEnded: Bool {
        get async { !engine.isEditing(id) }
    }
}

extension SyncEngine {
    /// Runs `body` in an edit session (``beginEdit()``), cancelled when `body` ends without
    /// committing it (or throws).
    ///
    /// ```swift
    /// try await engine.edit { edit in
    ///     let title = try await form.submitted()
    ///     try await edit.commit { try $0.update("events", key: 5, ["title": title]) }
    /// }
    /// ```
    public func edit<T: Sendable>(_ body: (EditSession) async throws -> T) async throws -> T {
        let session = await beginEdit()
        do {
            let result = try await body(session)
            await session.cancel()
            return result
        } catch {
            await session.cancel()
            throw error
        }
    }
}
