// swift-tools-version:6.2
import PackageDescription

/// Upcoming language features every library target builds with: `any` spelled out, members visible only
/// through the module imported for them, and imports internal unless a public API needs them (`public import`).
let libraryFeatures: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "SeedSync",
    platforms: [.macOS(.v14), .iOS(.v17)],
    products: [
        // Each product also carries the targets its public API exposes (`public import`), so an app can
        // import what it is handed: an app embedding SeedSyncImport can `import SeedSyncModel`.
        .library(name: "SeedSyncModel", targets: ["SeedSyncModel"]),
        .library(name: "SeedSyncStore", targets: ["SeedSyncStore", "SeedSyncModel"]),
        .library(name: "SeedSyncSQLiteStore", targets: ["SeedSyncSQLiteStore", "SeedSyncStore", "SeedSyncModel"]),
        .library(name: "SeedSyncPostgres", targets: ["SeedSyncPostgres", "SeedSyncStore", "SeedSyncModel"]),
        .library(name: "SeedSyncServer", targets: ["SeedSyncServer", "SeedSyncStore", "SeedSyncModel"]),
        .library(name: "SeedSyncDemo", targets: ["SeedSyncDemo", "SeedSyncStore", "SeedSyncModel"]),
        .library(name: "SeedSyncClient", targets: ["SeedSyncClient", "SeedSyncModel"]),
        .library(name: "SeedSyncSeed", targets: ["SeedSyncSeed", "SeedSyncModel"]),
        .library(name: "SeedSyncBuild", targets: ["SeedSyncBuild", "SeedSyncClient", "SeedSyncSeed", "SeedSyncModel"]),
        .library(
            name: "SeedSyncImport", targets: ["SeedSyncImport", "SeedSyncClient", "SeedSyncSeed", "SeedSyncModel"]),
        .executable(name: "seed-server", targets: ["seed-server"]),
        .executable(name: "seed-build", targets: ["seed-build"]),
        .executable(name: "seed-verify", targets: ["seed-verify"]),
        .executable(name: "seed-import", targets: ["seed-import"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        // No traits: SeedSync uses neither swift-configuration nor the full Foundation of its
        // URL-encoded forms, and a plugin's build (DocC, the man pages) would otherwise enable them
        // differently from `swift build`, rebuilding Hummingbird at every switch.
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1", traits: []),
        .package(url: "https://github.com/adam-fowler/compress-nio.git", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/swiftlang/swift-docc-plugin.git", from: "1.5.0"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.8.0"),
    ],
    targets: [
        // Wire model: protocol types, schema description, JSON values. Foundation only.
        .target(name: "SeedSyncModel", swiftSettings: libraryFeatures),
        // Deterministic demo dataset and mutation generator.
        .target(
            name: "SeedSyncDemo", dependencies: ["SeedSyncModel", "SeedSyncStore"], swiftSettings: libraryFeatures),
        // SQL shared by every SQLite file SeedSync writes: typed tables and value mapping (GRDB, and
        // SQLite's C API for the hot loops).
        .target(
            name: "SeedSyncSQL",
            dependencies: [
                "SeedSyncModel", .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
            ],
            swiftSettings: libraryFeatures
        ),
        // Storage: the protocol every store implements and the reading machinery stores share (the
        // change-feed reads, the served versions, bulk-load rows). What a server needs, not an app.
        .target(
            name: "SeedSyncStore",
            dependencies: ["SeedSyncModel", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: libraryFeatures),
        // Storage: the embedded SQLite store (GRDB).
        .target(
            name: "SeedSyncSQLiteStore",
            dependencies: [
                "SeedSyncModel", "SeedSyncStore", "SeedSyncSQL",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: libraryFeatures
        ),
        // Storage: the PostgreSQL store (postgres-nio), over tables the team's own programs may write.
        .target(
            name: "SeedSyncPostgres",
            dependencies: [
                "SeedSyncModel", "SeedSyncStore",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "_ConnectionPoolModule", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: libraryFeatures
        ),
        // HTTP server: the only target that imports Hummingbird. It reads JWT keys with the client's
        // bounded loader.
        .target(
            name: "SeedSyncServer",
            dependencies: [
                "SeedSyncModel", "SeedSyncStore", "SeedSyncGzip", "SeedSyncClient",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "CompressNIO", package: "compress-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "JWTKit", package: "jwt-kit"),
            ],
            swiftSettings: libraryFeatures
        ),
        // zlib, for `.gz` seeds (system library on Linux and Apple platforms).
        .systemLibrary(name: "CZlib", path: "Sources/CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        // Streaming gzip decompression with exact errors, shared by seed files and request bodies.
        .target(name: "SeedSyncGzip", dependencies: ["CZlib"], swiftSettings: libraryFeatures),
        // Seed files: the format, writing, applying change sets, manifests and verification (GRDB).
        .target(
            name: "SeedSyncSeed",
            dependencies: [
                "SeedSyncModel", "SeedSyncSQL", "CZlib", "SeedSyncGzip",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
                // PEM for Ed25519 signing keys, the form `openssl genpkey -algorithm ed25519` writes.
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: libraryFeatures
        ),
        // Protocol v1 client over URLSession (FoundationNetworking on Linux): limits, timeouts, retries.
        .target(
            name: "SeedSyncClient",
            dependencies: ["SeedSyncModel", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: libraryFeatures),
        // seed-build as a library: snapshot download, catch-up, publishing with a manifest.
        .target(
            name: "SeedSyncBuild", dependencies: ["SeedSyncModel", "SeedSyncSQL", "SeedSyncSeed", "SeedSyncClient"],
            swiftSettings: libraryFeatures),
        // seed-import as a library, for apps: install the shipped seed, then incremental sync.
        .target(
            name: "SeedSyncImport",
            dependencies: [
                "SeedSyncModel", "SeedSyncSQL", "SeedSyncSeed", "SeedSyncClient", "SeedSyncBuild",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: libraryFeatures
        ),
        // The command line shared by the executables: one CommandFailure, the options that reach a server.
        .target(
            name: "SeedSyncCLI",
            dependencies: ["SeedSyncClient", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            swiftSettings: libraryFeatures
        ),
        // Fixtures shared by every test target.
        .target(
            name: "SeedSyncTesting",
            dependencies: [
                "SeedSyncModel", "SeedSyncSQLiteStore", "SeedSyncStore", "SeedSyncPostgres", "SeedSyncDemo",
                "SeedSyncServer", "SeedSyncSeed",
                "SeedSyncClient", "SeedSyncBuild", .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "JWTKit", package: "jwt-kit"),
            ]
        ),
        .executableTarget(
            name: "seed-server",
            dependencies: [
                "SeedSyncCLI",
                "SeedSyncModel", "SeedSyncSQLiteStore", "SeedSyncStore", "SeedSyncPostgres", "SeedSyncServer",
                "SeedSyncDemo", "SeedSyncSeed",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "seed-build",
            dependencies: [
                "SeedSyncCLI",
                "SeedSyncBuild", "SeedSyncClient", "SeedSyncModel", "SeedSyncSeed",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(
            name: "seed-verify",
            dependencies: [
                "SeedSyncSeed", "SeedSyncModel", .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(
            name: "seed-import",
            dependencies: [
                "SeedSyncCLI",
                "SeedSyncImport", "SeedSyncClient", "SeedSyncModel", "SeedSyncSeed",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // Times a SyncEngine for scripts/bench/bench.sh and scripts/bench/load.sh; not a product.
        .executableTarget(
            name: "seed-bench",
            dependencies: [
                "SeedSyncCLI",
                "SeedSyncImport", "SeedSyncClient", "SeedSyncModel", "SeedSyncSQLiteStore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        // libFuzzer targets over what crosses a trust boundary (scripts/suites/fuzz.sh); a plain build replays inputs.
        .executableTarget(
            name: "seed-fuzz",
            dependencies: [
                "SeedSyncModel", "SeedSyncGzip", "SeedSyncSQL", "SeedSyncSeed", "SeedSyncSQLiteStore", "SeedSyncStore",
                "SeedSyncDemo",
            ]
        ),
        .testTarget(name: "SeedSyncModelTests", dependencies: ["SeedSyncModel", "SeedSyncTesting"]),
        .testTarget(name: "SeedSyncDemoTests", dependencies: ["SeedSyncDemo", "SeedSyncModel", "SeedSyncTesting"]),
        .testTarget(
            name: "SeedSyncSeedTests",
            dependencies: [
                "SeedSyncSeed", "SeedSyncBuild", "SeedSyncTesting", "SeedSyncDemo", "SeedSyncModel",
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        .testTarget(
            name: "SeedSyncStoreTests",
            dependencies: [
                "SeedSyncSQLiteStore", "SeedSyncStore", "SeedSyncPostgres", "SeedSyncDemo", "SeedSyncTesting",
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        .testTarget(
            name: "SeedSyncPostgresTests",
            dependencies: [
                "SeedSyncPostgres", "SeedSyncModel", "SeedSyncTesting", "SeedSyncServer", "SeedSyncClient",
                "SeedSyncBuild",
                "SeedSyncImport", "SeedSyncDemo", "SeedSyncSeed",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "SeedSyncClientTests",
            dependencies: [
                "SeedSyncClient", "SeedSyncCLI", "SeedSyncServer", "SeedSyncSQLiteStore", "SeedSyncStore",
                "SeedSyncDemo", "SeedSyncTesting",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "SeedSyncBuildTests",
            dependencies: [
                "SeedSyncBuild", "SeedSyncSeed", "SeedSyncClient", "SeedSyncSQLiteStore", "SeedSyncStore",
                "SeedSyncDemo", "SeedSyncTesting",
                "SeedSyncModel", .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "SeedSyncImportTests",
            dependencies: [
                "SeedSyncImport", "SeedSyncBuild", "SeedSyncSeed", "SeedSyncClient", "SeedSyncSQLiteStore",
                "SeedSyncStore", "SeedSyncDemo",
                "SeedSyncServer", "SeedSyncTesting", "SeedSyncModel", "SeedSyncPostgres",
                .product(name: "GRDB", package: "GRDB.swift"), .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"), .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "SeedSyncServerTests",
            dependencies: [
                "SeedSyncServer", "SeedSyncSQLiteStore", "SeedSyncStore", "SeedSyncPostgres", "SeedSyncClient",
                "SeedSyncDemo",
                "SeedSyncTesting", .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "CompressNIO", package: "compress-nio"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        // The Swift examples of the DocC articles, type-checked (scripts/tools/article-examples.py writes them).
        .testTarget(
            name: "ArticleExampleTests",
            dependencies: [
                "SeedSyncImport", "SeedSyncBuild", "SeedSyncSeed", "SeedSyncClient", "SeedSyncSQLiteStore",
                "SeedSyncStore",
                "SeedSyncPostgres",
                "SeedSyncServer", "SeedSyncDemo", "SeedSyncModel", .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
