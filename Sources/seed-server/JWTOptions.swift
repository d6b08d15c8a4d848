import ArgumentParser
import Foundation
import SeedSyncServer

/// `serve`'s options for JWTs from the app's identity provider: where the keys are, and what a
/// token must name and grants. No key source, no JWTs.
struct JWTOptions: ParsableArguments {
    @Option(help: "File holding the HS256 secret (instead of SEED_SERVER_JWT_SECRET); at least 32 bytes.")
    var jwtSecretFile: String?
    @Option(help: "JSON Web Key Set file JWTs are verified with; read again every 5 minutes.") var jwksFile: String?
    @Option(help: "URL of the identity provider's JSON Web Key Set (its jwks_uri); read again every 5 minutes.")
    var jwksUrl: String?
    @Option(help: "The iss a JWT must carry.") var jwtIssuer: String?
    @Option(help: "A value a JWT's aud must hold.") var jwtAudience: String?
    @Option(help: "The role of every JWT when --jwt-role-claim is not given: read or write.") var jwtRole: JWTRole =
        .read
    @Option(help: "The claim holding a JWT's role, read or write: a name, or a path such as app_metadata.role.")
    var jwtRoleClaim: String?
    @Option(
        help:
            "The claim holding the scope values a JWT grants (an array, or one value): a name, or a path such as app_metadata.teams. Required when the dataset declares a scope."
    )
    var jwtScopeClaim: String?
    @Option(help: "Seconds a JWT's exp and nbf may be off, for clocks that differ.") var jwtLeeway = 30

    /// A JWT's role, as `--jwt-role` names it.
    enum JWTRole: String, ExpressibleByArgument, CaseIterable {
        case read, write
    }

    func validate() throws {
        guard jwtLeeway >= 0 else { throw ValidationError("--jwt-leeway must be 0 or more") }
        if let jwksUrl, URL(string: jwksUrl)?.scheme.map({ ["http", "https"].contains($0) }) != true {
            throw ValidationError("--jwks-url must be an http or https URL")
        }
    }

    /// The JWT configuration these options give, or `nil` when they name no keys.
    ///
    /// - Throws: `ValidationError` when more than one key source is given, or the secret file
    ///   cannot be read.
    func configuration(environment: [String: String]) throws -> JWTConfiguration? {
        guard let keys = try keys(environment: environment) else { return nil }
        return JWTConfiguration(
            keys: keys, issuer: jwtIssuer, audience: jwtAudience, role: jwtRole == .write ? .write : .read,
            roleClaim: jwtRoleClaim, scopeClaim: jwtScopeClaim, leeway: .seconds(jwtLeeway))
    }

    private func keys(environment: [String: String]) throws -> JWTConfiguration.Keys? {
        var sources: [JWTConfiguration.Keys] = []
        if let secret = try secret(environment: environment) { sources.append(.secret(secret)) }
        if let jwksFile { sources.append(.keySetFile(jwksFile)) }
        if let jwksUrl, let url = URL(string: jwksUrl) { sources.append(.keySetURL(url)) }
        guard sources.count <= 1 else {
            throw ValidationError(
                "give one source of JWT keys: SEED_SERVER_JWT_SECRET or --jwt-secret-file, --jwks-file, or --jwks-url")
        }
        return sources.first
    }

    private func secret(environment: [String: String]) throws -> String? {
        guard let jwtSecretFile else { return environment["SEED_SERVER_JWT_SECRET"].flatMap { $0.isEmpty ? nil : $0 } }
        guard let data = FileManager.default.contents(atPath: jwtSecretFile) else {
            throw ValidationError(
                "cannot read the JWT secret file \(jwtSecretFile); check the path given to --jwt-secret-file")
        }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
