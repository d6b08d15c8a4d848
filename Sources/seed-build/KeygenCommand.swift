import ArgumentParser
import Foundation
import SeedSyncSeed

/// `seed-build keygen`: a new Ed25519 key pair for signing seeds.
struct KeygenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keygen",
        abstract: "Make an Ed25519 key pair for signing seeds.",
        discussion: """
            Writes the private key to OUT (PEM, readable by its owner alone) and the public key to \
            OUT's name with .pub.pem, and prints the public key's id and base64 form: what apps \
            trust (seed-import --trust, seed-verify --trust). Keep the private key out of the \
            repository: hand it to seed-build with --signing-key FILE or in SEED_SIGNING_KEY.
            """
    )

    @Option(help: "The private key file to write (neither it nor its .pub.pem may exist).") var out: String

    func run() throws {
        let key = SeedSigningKey()
        try key.write(to: out)
        print(
            """
            wrote the private key \(out) and the public key \(SeedSigningKey.publicKeyPath(for: out))
            key id \(key.publicKey.id)
            public key \(key.publicKey.base64)
            """)
    }
}
