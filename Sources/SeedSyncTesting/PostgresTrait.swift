import Foundation
public import Testing

extension TestPostgres {
    /// Whether the PostgreSQL tests run: when a server is configured (`SEEDSYNC_POSTGRES_URL`), or
    /// required (`SEEDSYNC_REQUIRE_POSTGRES=1`, which `scripts/test.sh` sets: there a missing server
    /// fails them, never skips them). A developer without PostgreSQL runs the rest with `swift test`.
    public static var isEnabled: Bool {
        let environment = ProcessInfo.processInfo.environment
        return environment["SEEDSYNC_POSTGRES_URL"] != nil || environment["SEEDSYNC_REQUIRE_POSTGRES"] == "1"
    }
}

extension StoreBackend {
    /// The stores a store test runs on: every store when the PostgreSQL tests run
    /// (``TestPostgres/isEnabled``), the embedded one alone otherwise.
    ///
    /// ```swift
    /// @Test(arguments: StoreBackend.tested)
    /// func commits(backend: StoreBackend) async throws { … }
    /// ```
    public static var tested: [StoreBackend] { TestPostgres.isEnabled ? allCases : [.sqlite] }
}

extension Tag {
    /// A test or suite that needs a PostgreSQL server.
    @Tag public static var postgres: Self
}

extension Trait where Self == ConditionTrait {
    /// For a test or suite that needs PostgreSQL: skipped, saying so, when the PostgreSQL tests do
    /// not run (``TestPostgres/isEnabled``).
    public static var needsPostgres: Self {
        .enabled(
            if: TestPostgres.isEnabled,
            "needs PostgreSQL: SEEDSYNC_POSTGRES_URL and PGPASSWORD (scripts/test.sh starts one and runs every test)")
    }
}
