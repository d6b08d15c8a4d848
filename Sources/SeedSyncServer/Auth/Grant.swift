public import SeedSyncModel

/// What one request may do, decided from its bearer token before any route runs.
///
/// A static token grants its role over everything; a JWT grants the role its claims (or the
/// server's configuration) give it, never `admin`. Routes read the grant of the request they
/// answer from a task-local value the middleware sets.
public struct Grant: Sendable, Hashable {
    /// The strongest thing the token allows.
    public var role: TokenSet.Role
    /// The scope values it reads and writes in a dataset with a scope: every one for a static
    /// token, those of its scope claim for a JWT (``JWTConfiguration/scopeClaim``).
    public var scopes: ScopeGrant

    public init(role: TokenSet.Role, scopes: ScopeGrant = .all) {
        self.role = role
        self.scopes = scopes
    }
}

/// The grant of the request being answered.
enum RequestGrant {
    /// `read` outside the middleware: a route it does not guard may not write.
    @TaskLocal static var current = Grant(role: .read)
}
