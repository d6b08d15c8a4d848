import SeedSyncModel
import SeedSyncStore
import ServiceLifecycle

/// Live sync's one reader: runs the store's ``SyncStore/watchRevisions(_:)`` for the life of the
/// application and publishes what it reports to the ``RevisionSignal`` held requests wait on.
/// At graceful shutdown it stops watching and closes the signal, so no held request delays the end.
struct RevisionWatch: Service {
    let store: any SyncStore
    let signal: RevisionSignal

    func run() async {
        let signal = signal
        await cancelWhenGracefulShutdown { [store] in await store.watchRevisions { signal.publish($0) } }
        signal.close()
    }
}
