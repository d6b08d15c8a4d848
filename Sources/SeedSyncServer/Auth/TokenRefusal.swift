/// Why a bearer token was refused: the reason of a 401 answer, and of its line in the log.
///
/// The message says what was wrong with the token and what to do, and never repeats the token.
package struct TokenRefusal: Error, CustomStringConvertible, Sendable {
    /// What was wrong. New codes may be added: a `switch` over it needs a `default`.
    package struct Code: Sendable, Hashable, CustomStringConvertible {
        package let rawValue: String
        private init(_ rawValue: String) { self.rawValue = rawValue }

        /// Neither a static token of the server nor, when JWTs are accepted, a JWT.
        package static let unknownToken = Code("unknown_token")
        /// Not three base64url parts, or a header or payload that is not a JSON object.
        package static let malformed = Code("malformed")
        /// An `alg` the server does not take (`none` among them), or not the one of the key named.
        package static let algorithm = Code("algorithm")
        /// No `kid` where the keys are a key set, or a `kid` the key set does not hold.
        package static let unknownKey = Code("unknown_key")
        /// The signature does not verify with the key.
        package static let signature = Code("signature")
        /// `exp` has passed, beyond the leeway.
        package static let expired = Code("expired")
        /// `nbf` has not come yet, beyond the leeway.
        package static let notYetValid = Code("not_yet_valid")
        /// `iss` or `aud` is not the server's.
        package static let wrongParty = Code("wrong_party")
        /// A claim the server needs is missing or holds something else (`exp`, the role claim).
        package static let claim = Code("claim")

        /// Every code, for the metrics that count refusals by reason.
        static let all: [Code] = [
            .unknownToken, .malformed, .algorithm, .unknownKey, .signature, .expired, .notYetValid, .wrongParty, .claim,
        ]

        package var description: String { rawValue }
    }

    package let code: Code
    package let message: String

    package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    package var description: String { "\(code): \(message)" }
}
