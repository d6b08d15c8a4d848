import Foundation
import SeedSyncClient
import SeedSyncModel

extension ImportSession {
    /// A way in, as ``weigh(server:)`` chose it.
    enum Way {
        case shipped
        case snapshot
        /// The newest seed the server offers, its manifest fetched already when it was weighed.
        case offered(URL, RegisteredSeed, PublishedSeed.Description)
    }

    /// Chooses how a fresh app gets in (``WayIn``): the shipped seed and its catch-up, the newest
    /// seed the server offers and its catch-up, or a snapshot, by the bytes each would download.
    ///
    /// A shipped seed that cannot be weighed (no summary, another version, outside the server's
    /// history) is installed as before: its checks say why it cannot be used. A server that cannot
    /// say what the ways would take (one that predates `GET /v1/sizes`) leaves the order the
    /// importer had before: the shipped seed, else the offered one, else a snapshot.
    func weigh(server: SchemaInfo) async throws -> Way {
        let version = configuration.expectedSchemaVersion ?? server.schemaVersion
        let ships = !configuration.seed.isEmpty
        let shipped = ships ? weighableRevision(of: seed, server: server, version: version) : nil
        if ships && shipped == nil { return .shipped }
        let offered = try await describedOffer(server, weighedBeside: ships)
        let offeredWay = offered.map { Way.offered($0.0, $0.1, $0.2) }
        let fallback = ships ? .shipped : offeredWay ?? .snapshot
        let revisions = [shipped, offered?.1.revision].compactMap { $0 }
        guard let sizes = try? await client.sizes(after: revisions, schemaVersion: version),
            let way = WayIn(choosingFrom: options(sizes, shipped: shipped, offered: offered))
        else { return fallback }
        report.wayIn = way
        emit(.choseWayIn(way))
        switch way.taken.source.kind {
        case .shippedSeed: return .shipped
        case .publishedSeed: return offeredWay ?? fallback
        default: return .snapshot
        }
    }

    /// The ways `sizes` can size, in wire bytes as this client downloads them (gzipped, unless it
    /// takes no compression).
    private func options(
        _ sizes: DownloadSizes, shipped: Int64?, offered: (URL, RegisteredSeed, PublishedSeed.Description)?
    ) -> [WayIn.Option] {
        let gzip = configuration.server.acceptsGzip
        var options: [WayIn.Option] = []
        if let shipped, let changes = sizes.changes(after: shipped) {
            options.append(
                .init(
                    source: InstallSource(.shippedSeed, configuration.seed), revision: shipped, fileBytes: 0,
                    catchUpBytes: changes.onTheWire(gzipped: gzip)))
        }
        if let (url, registered, description) = offered, let changes = sizes.changes(after: registered.revision) {
            options.append(
                .init(
                    source: InstallSource(.publishedSeed, url.absoluteString), revision: registered.revision,
                    fileBytes: description.size, catchUpBytes: changes.onTheWire(gzipped: gzip)))
        }
        if let pages = sizes.snapshot {
            options.append(
                .init(
                    source: InstallSource(.snapshot, configuration.server.serverURL.absoluteString), revision: nil,
                    fileBytes: pages.onTheWire(gzipped: gzip), catchUpBytes: 0))
        }
        return options
    }

    /// The shipped seed's revision when it can be weighed against the other ways: read without
    /// copying it, of the server's dataset and `version`, inside the server's history.
    private func weighableRevision(of seed: ShippedSeed, server: SchemaInfo, version: Int) -> Int64? {
        guard seed.problem == nil, let summary = seed.summary, summary.dataset == server.dataset,
            summary.schemaVersion == version, summary.revision >= server.minRevision,
            summary.revision <= server.revision
        else { return nil }
        return summary.revision
    }

    /// The newest seed the server offers, with its manifest (``PublishedSeed/describe(with:)``),
    /// or `nil` when it offers none. An offer that cannot be used (its manifest not found, not the
    /// registered seed's, untrusted) is reported and left out; beside a shipped seed, so is one
    /// that cannot be asked for at all (the shipped seed installs without it, as it always could).
    private func describedOffer(_ server: SchemaInfo, weighedBeside ships: Bool) async throws
        -> (URL, RegisteredSeed, PublishedSeed.Description)?
    {
        let offer: (URL, RegisteredSeed)?
        do {
            offer = try await offeredSeed(server)
        } catch  where ships {
            return nil
        }
        guard let (url, registered) = offer else { return nil }
        do {
            return (url, registered, try await publishedSeed(url, registered: registered).describe(with: client))
        } catch  where ships || Self.isUnusable(error) {
            refuse(
                offered: url, error,
                instead: ships
                    ? "the shipped seed and a snapshot were weighed without it" : "a snapshot was installed instead"
            )
            return nil
        }
    }
}
