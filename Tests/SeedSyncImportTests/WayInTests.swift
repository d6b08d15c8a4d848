import SeedSyncImport
import Testing

/// How ``WayIn`` chooses among the ways a fresh app weighed.
@Suite struct WayInTests {
    static func seed(_ kind: InstallSource.Kind, file: Int64, catchUp: Int64) -> WayIn.Option {
        .init(source: InstallSource(kind, "\(kind)"), revision: 1, fileBytes: file, catchUpBytes: catchUp)
    }

    static func pages(_ bytes: Int64) -> WayIn.Option {
        .init(source: InstallSource(.snapshot, "server"), revision: nil, fileBytes: bytes, catchUpBytes: 0)
    }

    @Test func theSeedWayWithTheFewestBytesIsTaken() {
        let shipped = Self.seed(.shippedSeed, file: 0, catchUp: 500)
        let offered = Self.seed(.publishedSeed, file: 300, catchUp: 100)
        #expect(WayIn(choosingFrom: [shipped, offered, Self.pages(1_000)])?.taken == offered)
        let cheaper = Self.seed(.shippedSeed, file: 0, catchUp: 399)
        #expect(WayIn(choosingFrom: [cheaper, offered, Self.pages(1_000)])?.taken == cheaper)
        // A tie goes to the first weighed: the shipped seed.
        let tie = Self.seed(.shippedSeed, file: 0, catchUp: 400)
        #expect(WayIn(choosingFrom: [tie, offered])?.taken == tie)
    }

    /// Pages must take less than three quarters of the cheapest seed way's bytes.
    @Test func pagesAreTakenOnlyWhenTheySaveAQuarter() {
        let offered = Self.seed(.publishedSeed, file: 800, catchUp: 200)
        #expect(WayIn(choosingFrom: [offered, Self.pages(750)])?.taken == offered)
        #expect(WayIn(choosingFrom: [offered, Self.pages(749)])?.taken == Self.pages(749))
        #expect(WayIn(choosingFrom: [Self.pages(10)])?.taken == Self.pages(10))
        #expect(WayIn(choosingFrom: []) == nil)
    }

    @Test func itSaysWhatItTookAndWhatItWeighed() throws {
        let way = try #require(
            WayIn(choosingFrom: [
                Self.seed(.shippedSeed, file: 0, catchUp: 3 << 20),
                Self.seed(.publishedSeed, file: 2 << 20, catchUp: 512), Self.pages(5 << 20),
            ]))
        #expect(
            way.description
                == "took the published seed at revision 1, 2.0 MiB (file 2.0 MiB, catch-up 0.5 KiB); weighed: shipped seed at revision 1, 3.0 MiB (catch-up); snapshot, 5.0 MiB"
        )
    }
}
