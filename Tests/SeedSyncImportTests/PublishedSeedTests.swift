import Foundation
import SeedSyncBuild
import SeedSyncClient
import SeedSyncDemo
import SeedSyncImport
import SeedSyncModel
import SeedSyncSeed
import SeedSyncTesting
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A fresh app installs a seed published over HTTP (`seed-server --seeds`, or a host in front of
/// it that misbehaves on purpose): resumed after cuts, started over when it must, refused when the
/// bytes are not the seed.
@Suite struct PublishedSeedTests {
    /// A served demo store whose seeds folder holds a seed (and its `.gz`), with change sets after it.
    struct Published: Sendable {
        let served: ServedStore
        /// The server's seeds folder.
        let seeds: String
        let manifest: SeedManifest
        var database: String { served.path("app/events.sqlite") }
        var download: String { database + ".seed" }

        /// The address of the seed's file `name` on the server at `base` (the server's own, by default).
        func url(_ name: String? = nil, on base: URL? = nil) -> URL {
            (base ?? served.url).appendingPathComponent(
                "v1/seeds/\(manifest.sha256)/\(name ?? manifest.gzip!.file)")
        }

        func importer(
            _ url: URL?, retry: RetryPolicy = RetryPolicy(maxAttempts: 3, baseDelay: 0.05), timeout: Double = 10,
            trusting keys: [SeedPublicKey] = []
        ) -> SeedImporter {
            SeedImporter(
                configuration: .init(
                    seed: "", database: database,
                    server: .init(serverURL: served.url, token: liveServerToken, requestTimeout: timeout, retry: retry),
                    syncLimit: 50, trustedKeys: TrustedKeys(keys), seedURL: url))
        }

        /// The app's rows equal the server's.
        func expectCaughtUp() async throws {
            #expect(try contents(ofSeed: database) == (try await Fixtures.contents(of: served.store)))
            #expect(!FileManager.default.fileExists(atPath: download), "the download is removed once installed")
        }
    }

    func withPublished(
        events: Int = 2000, signedBy keys: [SeedSigningKey] = [],
        _ body: @escaping @Sendable (Published) async throws -> Void
    ) async throws {
        try await withTemporaryDirectory { folder in
            let seeds = folder.path
            try await withServedStore(events: events, changes: 10, configure: { $0.seedsFolder = seeds }) { served in
                let builder = SeedBuilder(
                    client: served.client(),
                    options: .init(output: seeds + "/demo.sqlite", pageSize: 500, gzip: true, signingKeys: keys))
                let report = try await builder.build()
                _ = try await ChangeGenerator.mutate(served.store, changes: 15, seed: 5)
                try await body(Published(served: served, seeds: seeds, manifest: report.manifest))
            }
        }
    }

    @Test(arguments: [true, false]) func aFreshAppInstallsThePublishedSeed(gzip: Bool) async throws {
        try await withPublished { published in
            let events = LockedValue<[SeedDownload]>([])
            let name = gzip ? published.manifest.gzip!.file : published.manifest.file
            let report = try await published.importer(published.url(name)).run { event in
                if case .downloadingSeed(let download) = event { events.update { $0.append(download) } }
            }
            let revision = try await published.served.store.revisions().revision
            #expect(report.installed && report.toRevision == revision)
            try await published.expectCaughtUp()
            let size = gzip ? published.manifest.gzip!.size : published.manifest.size
            #expect(events.get().first?.received == 0 && events.get().last?.received == size)
            #expect(events.get().allSatisfy { $0.total == size })
            // The next run neither downloads again nor looks for a shipped seed.
            let downloads = events.get().count
            let again = try await published.importer(published.url(name)).run { event in
                if case .downloadingSeed(let download) = event { events.update { $0.append(download) } }
            }
            #expect(!again.installed && again.seedProblem == nil && events.get().count == downloads)
        }
    }

    /// An app that ships no seed and gives no address asks the server (`GET /v1/seeds`): it
    /// downloads the newest seed offered, of its version, not retired, published (in the server's
    /// folder, or at a registered address), then catches up; it says which it took.
    @Test func aFreshAppWithNoSeedTakesTheNewestTheServerOffers() async throws {
        try await withPublished { published in
            let admin = published.served.client(token: liveServerAdminToken)
            // The folder's seed, registered without an address: the server gives its own.
            _ = try await admin.register(
                SeedRegistration(
                    sha256: published.manifest.sha256, revision: published.manifest.revision, schemaVersion: 1))
            // A newer one, retired: not offered.
            _ = try await ChangeGenerator.mutate(published.served.store, changes: 5, seed: 8)
            let retired = try await SeedBuilder(
                client: admin,
                options: .init(output: published.seeds + "/retired.sqlite", pageSize: 500, register: true)
            ).build()
            _ = try await published.served.store.retireSeed(sha256: retired.manifest.sha256)
            // One registered without an address the server publishes: not offered either.
            _ = try await admin.register(
                SeedRegistration(
                    sha256: String(repeating: "e", count: 64), revision: retired.manifest.revision, schemaVersion: 1))
            let offered = try await published.served.client().registeredSeeds()
            #expect(
                offered.first { $0.sha256 == published.manifest.sha256 }?.url
                    == "v1/seeds/\(published.manifest.sha256)/\(published.manifest.gzip!.file)")
            let found = LockedValue<[URL]>([])
            let report = try await published.importer(nil).run { event in
                if case .foundPublishedSeed(let url, let revision) = event {
                    #expect(revision == published.manifest.revision)
                    found.update { $0.append(url) }
                }
            }
            #expect(found.get() == [published.url()])
            #expect(
                report.installed
                    && report.installedFrom == InstallSource(.publishedSeed, published.url().absoluteString))
            try await published.expectCaughtUp()
            // Later runs neither look for a seed nor compare one.
            let again = try await published.importer(nil).run { event in
                if case .foundPublishedSeed = event { found.update { $0.append(published.url()) } }
            }
            #expect(!again.installed && again.seedProblem == nil && found.get().count == 1)
        }
    }

    /// A fresh app that ships an old seed weighs it against the newer seed the server offers and a
    /// snapshot, by the bytes each would download (`GET /v1/sizes`, the offered seed's manifest),
    /// takes the fewest and says so: here the offered seed, whose catch-up is short, over the shipped
    /// one's long catch-up. Shipping the newer seed, it takes that: nothing to download but its catch-up.
    @Test func aFreshAppTakesTheWayInWithTheFewestBytes() async throws {
        try await withPublished { published in
            let old = published.seeds + "/demo.sqlite"
            _ = try await ChangeGenerator.mutate(published.served.store, changes: 3_000, seed: 21)
            let newer = try await SeedBuilder(
                client: published.served.client(token: liveServerAdminToken),
                options: .init(output: published.seeds + "/newer.sqlite", pageSize: 500, gzip: true, register: true)
            ).build()
            _ = try await ChangeGenerator.mutate(published.served.store, changes: 5, seed: 22)
            for (shipped, taken) in [
                (old, InstallSource.Kind.publishedSeed), (published.seeds + "/newer.sqlite", .shippedSeed),
            ] {
                let database = published.served.path("app-\(taken).sqlite")
                let chosen = LockedValue<[WayIn]>([])
                let report = try await SeedImporter(
                    configuration: .init(
                        seed: shipped, database: database,
                        server: .init(serverURL: published.served.url, token: liveServerToken, requestTimeout: 10))
                ).run { event in
                    if case .choseWayIn(let way) = event { chosen.update { $0.append(way) } }
                }
                let way = try #require(report.wayIn)
                #expect(chosen.get() == [way])
                #expect(way.weighed.map(\.source.kind) == [.shippedSeed, .publishedSeed, .snapshot], "\(way)")
                #expect(way.taken.source.kind == taken && report.installedFrom == way.taken.source, "\(way)")
                let offered = try #require(way.weighed.first { $0.source.kind == .publishedSeed })
                #expect(offered.revision == newer.manifest.revision && offered.fileBytes == newer.manifest.gzip?.size)
                #expect(way.weighed[0].fileBytes == 0)
                let longer = shipped == old
                #expect((way.weighed[0].catchUpBytes > offered.catchUpBytes) == longer, "\(way)")
                #expect(try contents(ofSeed: database) == (try await Fixtures.contents(of: published.served.store)))
            }
        }
    }

    /// Beside a shipped seed, an offered seed whose manifest is not at its address is left out of
    /// the weighing and reported; the shipped seed and a snapshot are weighed without it.
    @Test func anOfferedSeedThatCannotBeUsedIsWeighedWithoutBesideAShippedSeed() async throws {
        try await withPublished { published in
            _ = try await published.served.client(token: liveServerAdminToken).register(
                SeedRegistration(
                    sha256: published.manifest.sha256, revision: published.manifest.revision, schemaVersion: 1,
                    url: published.url("not-uploaded.sqlite.gz").absoluteString))
            let report = try await SeedImporter(
                configuration: .init(
                    seed: published.seeds + "/demo.sqlite", database: published.database,
                    server: .init(serverURL: published.served.url, token: liveServerToken, requestTimeout: 10))
            ).run()
            let way = try #require(report.wayIn)
            #expect(way.weighed.map(\.source.kind) == [.shippedSeed, .snapshot], "\(way)")
            #expect(report.installedFrom == way.taken.source)
            #expect(report.seedProblem?.contains("HTTP 404") == true, "\(report.seedProblem ?? "")")
            #expect(report.seedProblem?.contains("weighed without it") == true)
            try await published.expectCaughtUp()
        }
    }

    /// A server that predates `GET /v1/sizes` (404) cannot say what the ways would take: the app
    /// keeps the order it had, the shipped seed first, and weighs nothing.
    @Test func aServerThatCannotSaySizesLeavesTheShippedSeedFirst() async throws {
        try await withPublished { published in
            _ = try await published.served.client(token: liveServerAdminToken).register(
                SeedRegistration(
                    sha256: published.manifest.sha256, revision: published.manifest.revision, schemaVersion: 1))
            try await withAlteringProxy(to: published.served.url) { answer in
                guard answer.path == "/v1/sizes" else { return answer }
                var missing = answer
                missing.status = 404
                missing.body = Data(#"{"error": {"code": "not_found", "message": "no such route"}}"#.utf8)
                return missing
            } _: { proxy in
                let report = try await SeedImporter(
                    configuration: .init(
                        seed: published.seeds + "/demo.sqlite", database: published.database,
                        server: .init(serverURL: proxy, token: liveServerToken, requestTimeout: 10))
                ).run()
                #expect(report.wayIn == nil && report.installedFrom?.kind == .shippedSeed)
                try await published.expectCaughtUp()
            }
        }
    }

    /// A seed registered with the address it is published at elsewhere (`--published-at`: a CDN,
    /// here a host in front of the server) is downloaded from there, without the server's token.
    /// Registered again with another address (the seed moved), the record takes the new one.
    @Test func aFreshAppDownloadsTheSeedFromTheAddressItWasRegisteredWith() async throws {
        try await withPublished { published in
            try await SeedHost.with(origin: published.served.url, token: liveServerToken, plan: { _ in .init() }) {
                host, log in
                _ = try await ChangeGenerator.mutate(published.served.store, changes: 3, seed: 9)
                let cdn = host.appendingPathComponent("v1/seeds/pending")
                let build = try await SeedBuilder(
                    client: published.served.client(token: liveServerAdminToken),
                    options: .init(
                        output: published.seeds + "/cdn.sqlite", pageSize: 500, gzip: true, register: true,
                        publishedAt: cdn)
                ).build()
                let url = cdn.appendingPathComponent(build.manifest.gzip!.file)
                #expect(build.registered?.url == url.absoluteString)
                // The host serves the folder's files under the seed's SHA-256, as the server does.
                let served = host.appendingPathComponent(
                    "v1/seeds/\(build.manifest.sha256)/\(build.manifest.gzip!.file)")
                _ = try await published.served.client(token: liveServerAdminToken).register(
                    SeedRegistration(
                        sha256: build.manifest.sha256, revision: build.manifest.revision, schemaVersion: 1,
                        url: served.absoluteString))
                let report = try await published.importer(nil).run()
                #expect(report.installedFrom == InstallSource(.publishedSeed, served.absoluteString))
                try await published.expectCaughtUp()
                #expect(log.get().contains { $0.path.hasSuffix(".gz") && !$0.authorized }, "\(log.get())")
            }
        }
    }

    /// A seed the server offers that cannot be used, not at its address (registered before its
    /// upload) or not the seed registered (another seed's files there), does not stop a fresh app:
    /// it installs a snapshot and says why.
    @Test(arguments: ["missing", "another seed"]) func anOfferedSeedThatCannotBeUsedGivesWayToASnapshot(
        _ how: String
    ) async throws {
        try await withPublished { published in
            let sha256 = how == "missing" ? published.manifest.sha256 : String(repeating: "d", count: 64)
            let url = how == "missing" ? published.url("not-uploaded.sqlite.gz") : published.url()
            _ = try await published.served.client(token: liveServerAdminToken).register(
                SeedRegistration(
                    sha256: sha256, revision: published.manifest.revision, schemaVersion: 1, url: url.absoluteString))
            let rejected = LockedValue<[String]>([])
            let report = try await published.importer(nil).run { event in
                if case .seedRejected(let reason) = event { rejected.update { $0.append(reason) } }
            }
            #expect(report.installed && report.installedFrom?.kind == .snapshot)
            let expected =
                how == "missing" ? "HTTP 404" : "describes the seed \(published.manifest.sha256), not \(sha256)"
            #expect(rejected.get().count == 1 && report.seedProblem == rejected.get().first)
            #expect(report.seedProblem?.contains(expected) == true, "\(report.seedProblem ?? "")")
            try await published.expectCaughtUp()
        }
    }

    /// With no seed offered (none registered), a fresh app with no seed installs a snapshot.
    @Test func aFreshAppWithNoSeedAndNoneOfferedInstallsASnapshot() async throws {
        try await withPublished { published in
            let report = try await published.importer(nil).run()
            #expect(report.installed && report.installedFrom?.kind == .snapshot)
            try await published.expectCaughtUp()
        }
    }

    /// A fresh app with no seed older than every version the server serves (the catalog's oldest
    /// is 3): a snapshot would come in a version it cannot read, so it installs nothing and says so.
    @Test func aFreshAppOlderThanEveryServedVersionInstallsNothing() async throws {
        try await StoreBackend.sqlite.withStore { store in
            try await store.commit(Fixtures.catalogCreation())
            try await withLiveServer(store) { url in
                try await withTemporaryDirectory { folder in
                    let database = folder.appendingPathComponent("app.sqlite").path
                    let importer = SeedImporter(
                        configuration: .init(
                            seed: "", database: database,
                            server: .init(serverURL: url, token: liveServerToken, requestTimeout: 10, retry: .none),
                            expectedSchemaVersion: 2))
                    await #expect {
                        try await importer.run()
                    } throws: { error in
                        (error as? ImportError)?.code == .mismatch
                            && "\(error)".contains(
                                "expects schema version 2, but the server serves only newer ones (3)")
                    }
                    #expect(!FileManager.default.fileExists(atPath: database))
                    #expect(!FileManager.default.fileExists(atPath: database + "-wal"))
                }
            }
        }
    }

    /// A fresh app with no seed and no server to ask: the server's error, and no database.
    @Test func aFreshAppWithNoSeedAndNoServerInstallsNothing() async throws {
        try await withTemporaryDirectory { folder in
            let database = folder.appendingPathComponent("app.sqlite").path
            let importer = SeedImporter(
                configuration: .init(
                    seed: "", database: database,
                    server: .init(
                        serverURL: URL(string: "http://127.0.0.1:1")!, token: nil, requestTimeout: 2, retry: .none)))
            await #expect { try await importer.run() } throws: { ($0 as? SyncClientError)?.code == .unreachable }
            #expect(!FileManager.default.fileExists(atPath: database))
        }
    }

    /// The server's route: whole files, one range, `If-Range`, `HEAD`, 304, 416, and nothing it
    /// was not given.
    @Test func theServerAnswersRangesOfPublishedFiles() async throws {
        try await withPublished(events: 300) { published in
            let url = published.url()
            let file = try Data(contentsOf: URL(fileURLWithPath: published.seeds + "/demo.sqlite.gz"))
            func get(_ url: URL, _ headers: [String: String] = [:], method: String = "GET") async throws -> (
                Data, HTTPURLResponse
            ) {
                var request = URLRequest(url: url)
                request.httpMethod = method
                request.setValue("Bearer \(liveServerToken)", forHTTPHeaderField: "Authorization")
                for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
                return try await TestHTTP.data(for: request)
            }
            let (whole, answer) = try await get(url)
            #expect(answer.statusCode == 200 && whole == file)
            let tag = "\"\(published.manifest.gzip!.sha256)\""
            #expect(answer.value(forHTTPHeaderField: "ETag") == tag)
            #expect(answer.value(forHTTPHeaderField: "Cache-Control")?.contains("immutable") == true)
            #expect(answer.value(forHTTPHeaderField: "Content-Type") == "application/gzip")
            let (part, partial) = try await get(url, ["Range": "bytes=100-"])
            #expect(partial.statusCode == 206 && part == file.dropFirst(100))
            #expect(partial.value(forHTTPHeaderField: "Content-Range") == "bytes 100-\(file.count - 1)/\(file.count)")
            let (middle, _) = try await get(url, ["Range": "bytes=10-19"])
            #expect(middle == file[10...19])
            let (changed, full) = try await get(url, ["Range": "bytes=100-", "If-Range": "\"other\""])
            #expect(full.statusCode == 200 && changed == file)
            let (_, beyond) = try await get(url, ["Range": "bytes=\(file.count)-"])
            #expect(
                beyond.statusCode == 416 && beyond.value(forHTTPHeaderField: "Content-Range") == "bytes */\(file.count)"
            )
            let (_, unchanged) = try await get(url, ["If-None-Match": tag])
            #expect(unchanged.statusCode == 304)
            let (head, headAnswer) = try await get(url, method: "HEAD")
            #expect(headAnswer.statusCode == 200 && head.isEmpty)
            let (manifest, _) = try await get(published.url("demo.sqlite.manifest.json"))
            #expect(try SeedManifest.decode(manifest, from: "route").sha256 == published.manifest.sha256)
            for other in [
                published.url("demo.sqlite.partial"),
                published.served.url.appendingPathComponent(
                    "v1/seeds/\(String(repeating: "0", count: 64))/demo.sqlite"),
            ] {
                #expect(try await get(other).1.statusCode == 404, "\(other)")
            }
            var anonymous = URLRequest(url: url)
            anonymous.httpMethod = "GET"
            #expect(try await TestHTTP.data(for: anonymous).1.statusCode == 401)
            // A seed published right after the folder was read (the unknown one above) is served at once.
            let later = try await SeedBuilder(
                client: published.served.client(),
                options: .init(output: published.seeds + "/later.sqlite", pageSize: 500)
            ).build()
            let laterURL = published.served.url.appendingPathComponent(
                "v1/seeds/\(later.manifest.sha256)/later.sqlite")
            #expect(try await get(laterURL).1.statusCode == 200)
        }
    }

    /// Cut at a random byte on every request: each attempt resumes where the file ends, so the
    /// bytes sent add up to the file about once; the token never goes to the other host.
    @Test func aDownloadCutAtRandomBytesResumesEachTime() async throws {
        try await withPublished { published in
            let size = Int(published.manifest.gzip!.size)
            var generator = SplitMix64(seed: 43)
            // Six cuts of an eighth of the file at most: the seventh request ends it.
            let cuts = (0..<6).map { _ in Int.random(in: 1_000..<max(2_000, size / 8), using: &generator) }
            try await SeedHost.with(
                origin: published.served.url,
                plan: { request in
                    (1...cuts.count).contains(request.seedAttempt)
                        ? .init(cutAfter: cuts[request.seedAttempt - 1]) : .init()
                }
            ) { host, log in
                let url = published.url(on: host)
                try await published.importer(url, retry: RetryPolicy(maxAttempts: 2, baseDelay: 0.01)).run()
                try await published.expectCaughtUp()
                let files = log.get().filter { $0.path.hasSuffix(".gz") }
                #expect(files.count == cuts.count + 1, "\(files)")
                #expect(
                    files.dropFirst().allSatisfy {
                        $0.range != nil && $0.ifRange == "\"\(published.manifest.gzip!.sha256)\""
                    })
                #expect(
                    files.map(\.sent).reduce(0, +) < size + 6 * 4096, "resumed, not started over: \(files.map(\.sent))")
                #expect(!log.get().contains { $0.authorized }, "the token stays with the server's origin")
            }
        }
    }

    /// A run that ends after a cut (the host fails the retry) keeps the partial file; the next
    /// run asks for the rest only.
    @Test func aCutRunResumesOnTheNextRun() async throws {
        try await withPublished { published in
            try await SeedHost.with(
                origin: published.served.url,
                plan: { request in
                    switch request.seedAttempt {
                    case 1: .init(cutAfter: 50_000)
                    case 2: .init(status: 503)
                    default: .init()
                    }
                }
            ) { host, log in
                let url = published.url(on: host)
                let error = await #expect(throws: SyncClientError.self) {
                    try await published.importer(url, retry: .none).run()
                }
                #expect(error?.code == .serverError && error?.status == 503)
                let partial = published.download + "/" + url.lastPathComponent
                #expect(FileManager.default.fileExists(atPath: partial))
                #expect(!FileManager.default.fileExists(atPath: published.database))
                try await published.importer(url, retry: .none).run()
                try await published.expectCaughtUp()
                let resumed = try #require(log.get().last { $0.path.hasSuffix(".gz") })
                #expect(resumed.range == "bytes=50000-", "\(log.get())")
            }
        }
    }

    /// A host without ranges, and a file changed since the cut: the whole file again, from byte 0.
    @Test(arguments: ["no ranges", "changed"]) func aHostThatCannotResumeStartsOver(_ how: String) async throws {
        try await withPublished { published in
            try await SeedHost.with(
                origin: published.served.url,
                plan: { request in
                    switch (how, request.seedAttempt) {
                    case (_, 1): .init(cutAfter: 30_000, eTag: how == "changed" ? "\"before\"" : nil)
                    case ("no ranges", _): .init(ignoreRange: true)
                    default: .init()
                    }
                }
            ) { host, log in
                try await published.importer(published.url(on: host)).run()
                try await published.expectCaughtUp()
                let files = log.get().filter { $0.path.hasSuffix(".gz") }
                #expect(files.count == 2 && files[1].range == "bytes=30000-", "\(files)")
                #expect(files[1].sent == Int(published.manifest.gzip!.size), "the whole file again")
            }
        }
    }

    /// Bytes that are not the seed: an altered byte fails the SHA-256, a longer body the size; the
    /// download is removed, nothing installed, and the next run (from an honest host) installs.
    @Test(arguments: ["altered", "longer"]) func bytesThatAreNotTheSeedAreRefused(_ how: String) async throws {
        try await withPublished { published in
            try await SeedHost.with(
                origin: published.served.url,
                plan: { request in
                    guard request.path.hasSuffix(".gz") else { return .init() }
                    return how == "altered" ? .init(flipByte: 5_000) : .init(appendBytes: 100)
                }
            ) { host, _ in
                let url = published.url(on: host)
                let error = await #expect(throws: (any Error).self) { try await published.importer(url).run() }
                if how == "altered" {
                    let refused = try #require(error as? ImportError)
                    #expect(refused.code == .invalidSeed && refused.description.contains("does not match its manifest"))
                } else {
                    #expect((error as? SyncClientError)?.code == .responseTooLarge, "\(String(reflecting: error!))")
                }
                #expect(!FileManager.default.fileExists(atPath: published.download + "/" + url.lastPathComponent))
                #expect(!FileManager.default.fileExists(atPath: published.database))
            }
            try await published.importer(published.url()).run()
            try await published.expectCaughtUp()
        }
    }

    /// A resumed answer for other bytes than asked (the partial file is removed, the run fails, the
    /// next starts afresh), and a host that always answers with a `Content-Encoding` (refused: its
    /// bytes are not the file's as stored; asked for again, then the run fails naming it).
    @Test(arguments: ["other range", "coded always"]) func anAnswerThatIsNotTheBytesAskedForIsRefused(_ how: String)
        async throws
    {
        try await withPublished { published in
            try await SeedHost.with(
                origin: published.served.url,
                plan: { request in
                    switch (how, request.seedAttempt) {
                    case ("other range", 1): .init(cutAfter: 30_000)
                    case ("other range", 2): .init(contentRange: "bytes 0-99/\(published.manifest.gzip!.size)")
                    case ("coded always", 1...2): .init(contentEncoding: "x-seedsync-test")
                    default: .init()
                    }
                }
            ) { host, _ in
                let url = published.url(on: host)
                let error = await #expect(throws: SyncClientError.self) {
                    try await published.importer(url, retry: RetryPolicy(maxAttempts: 2, baseDelay: 0.01)).run()
                }
                if how == "coded always" {
                    #expect(
                        error?.code == .malformedResponse && error?.description.contains("Content-Encoding") == true)
                } else {
                    #expect(
                        error?.code == .serverError && error?.description.contains("bytes 0-99") == true, "\(error!)")
                    #expect(!FileManager.default.fileExists(atPath: published.download + "/" + url.lastPathComponent))
                }
                #expect(!FileManager.default.fileExists(atPath: published.database))
                try await published.importer(url).run()
                try await published.expectCaughtUp()
            }
        }
    }

    /// A coded answer once (a proxy's glitch) is asked for again like a cut, and the install goes on.
    @Test func aCodedAnswerOnceIsAskedForAgain() async throws {
        try await withPublished { published in
            try await SeedHost.with(
                origin: published.served.url,
                plan: { request in request.seedAttempt == 1 ? .init(contentEncoding: "gzip") : .init() }
            ) { host, _ in
                let url = published.url(on: host)
                try await published.importer(url, retry: RetryPolicy(maxAttempts: 2, baseDelay: 0.01)).run()
                try await published.expectCaughtUp()
            }
        }
    }

    /// A stall ends the attempt after the request timeout (3 s), long before the host would cut
    /// the connection (30 s); the retry resumes.
    @Test func aStalledDownloadIsResumed() async throws {
        try await withPublished { published in
            let finished = LockedValue<Duration?>(nil)
            try await SeedHost.with(
                origin: published.served.url,
                plan: { request in
                    request.seedAttempt == 1 ? .init(stallAfter: 20_000, stallSeconds: 30) : .init()
                }
            ) { host, log in
                let start = ContinuousClock.now
                let importer = published.importer(
                    published.url(on: host), retry: RetryPolicy(maxAttempts: 5, baseDelay: 0.05), timeout: 3)
                try await importer.run()
                finished.set(ContinuousClock.now - start)
                try await published.expectCaughtUp()
                // The first retry resumes (later ones may too, when the loaded suite times one out).
                #expect(log.get().first { $0.seedAttempt == 2 }?.range == "bytes=20000-", "\(log.get())")
            }
            #expect(
                try #require(finished.get()) < .seconds(25), "the client gave up on the stall before the host cut it")
        }
    }

    /// 404 and 410: nothing is published there, said at once; 503: retried, then said.
    @Test(arguments: [404, 410, 503]) func aHostThatHasNoSeedIsAClearError(_ status: Int) async throws {
        try await withPublished(events: 300) { published in
            try await SeedHost.with(
                origin: published.served.url,
                plan: { request in
                    request.path.hasSuffix(".gz") ? .init(status: status) : .init()
                }
            ) { host, log in
                let error = await #expect(throws: SyncClientError.self) {
                    try await published.importer(published.url(on: host)).run()
                }
                #expect(error?.code == (status == 503 ? .serverError : .notFound), "\(error!)")
                #expect(error?.description.contains(host.absoluteString) == true)
                #expect(log.get().filter { $0.path.hasSuffix(".gz") }.count == (status == 503 ? 3 : 1))
            }
        }
    }

    /// With trusted keys, an unsigned published seed is refused from its manifest: its file is
    /// never asked for. A signed one installs.
    @Test func aPublishedSeedIsCheckedForItsSignatureBeforeItsDownload() async throws {
        let key = SeedSigningKey()
        try await withPublished(events: 300) { published in
            try await SeedHost.with(origin: published.served.url, plan: { _ in .init() }) { host, log in
                let error = await #expect(throws: ImportError.self) {
                    try await published.importer(published.url(on: host), trusting: [key.publicKey]).run()
                }
                #expect(error?.code == .untrustedSeed)
                #expect(!log.get().contains { $0.path.hasSuffix(".gz") })
            }
        }
        try await withPublished(events: 300, signedBy: [key]) { published in
            try await published.importer(published.url(), trusting: [key.publicKey]).run()
            try await published.expectCaughtUp()
        }
    }
}

extension SeedHost.Request {
    /// 1 for the first request of the seed file (the `.gz`), 2 for the next, …; 0 for other files.
    var seedAttempt: Int { path.hasSuffix(".gz") ? attempt : 0 }
}
