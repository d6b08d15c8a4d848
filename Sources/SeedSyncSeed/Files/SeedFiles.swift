package import SeedSyncSQL

/// The files of a seed at `output` and of the build that makes it, every name spelled here: the
/// seed, its `.gz` copy and its manifest; the build's work database (`.partial`); and the name each
/// finished file takes before its rename into place (`.new`). A build beside an app's database
/// (after 410) is the `SeedFiles` of `DatabaseFiles.snapshot`.
///
/// ```swift
/// let files = SeedFiles(output: "Snapshots/catalog.sqlite")
/// files.manifest         // Snapshots/catalog.sqlite.manifest.json
/// files.partial.path     // Snapshots/catalog.sqlite.partial
/// SeedFiles.staging(files.gzip)  // Snapshots/catalog.sqlite.gz.new
/// ```
package struct SeedFiles: Sendable, Hashable {
    /// The seed.
    package let output: String

    package init(output: String) { self.output = output }

    /// The compressed copy, `.gz`.
    package var gzip: String { output + ".gz" }
    /// The manifest, `.manifest.json` (see ``SeedManifest/path(forSeed:)``).
    package var manifest: String { SeedManifest.path(forSeed: output) }
    /// The build's work database, `.partial`, which `--resume` goes on from.
    package var partial: DatabaseFiles { DatabaseFiles(output + ".partial") }
    /// The finished seed before its rename into place.
    package var finished: String { Self.staging(output) }
    /// What a publish writes before its renames: the seed's, the copy's and the manifest's `.new`.
    package var staged: [String] { [output, gzip, manifest].map(Self.staging) }

    /// The name a finished file takes before its rename to `path`: `.new`.
    package static func staging(_ path: String) -> String { path + ".new" }
}
