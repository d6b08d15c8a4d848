/// What one request may do, decided from its bearer token before any route runs.
///
/// A static token grants its role over everything; a JWT grants the role its claims (or the
/// server's configuration) give it, never `admin`. Routes read the grant of the request they
/// answer from a task-local value the middleware sets.
public struct Grant: Sendable, Hashable {
    /// The strongest thing the token allows.
    public var role: TokenSet.Role

    public init(role: TokenSet.Role) {
        self.role = role
    }
}

/// The grant of the request being answered.
enum RequestGrant {
    /// `read` outside the middleware: a route it does not guard may not write.
    @TaskLocal static var current = Grant(role: .read)
}
