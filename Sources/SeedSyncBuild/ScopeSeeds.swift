import Foundation
public import SeedSyncModel
import SeedSyncSQL
import SeedSyncSeed

/// Which scope values a build also cuts a seed for, beside the seed of everything it downloaded
/// (`seed-build --scope team=42`, `--every-scope`; PROTOCOL.md §10).
///
/// The build downloads the dataset once, with a token of every value; each value's seed is then
/// cut from the finished rows (see `SeedWriter`'s scope cutting): the shared rows and that
/// value's rows, at the build's revision, with `scopes` set to `[value]` in its metadata and
/// manifest. It is the seed `seed-build` with a token of that value alone would write at that
/// revision, byte for byte. Each goes beside ``SeedBuilder/Options/output``, named by
/// ``SeedBuilder/output(forScope:value:)``.
///
/// ```swift
/// let options = SeedBuilder.Options(output: "seeds/clubs.sqlite", scopes: .every)
/// // seeds/clubs.sqlite, seeds/clubs.team-1.sqlite, seeds/clubs.team-2.sqlite, …
/// ```
public enum ScopeSeeds: Sendable, Hashable {
    /// A seed for each value any row holds.
    case every
    /// A seed for each of these values of the scope named `scope`, in their string form (a value
    /// no row holds yet gets a seed of the shared rows).
    case only(scope: String, values: [String])
}

extension SeedBuilder {
    /// Where the seed of `value` of `scope` goes: beside ``Options/output``, its name's `.sqlite`
    /// replaced by `.<scope>-<value>.sqlite` (`clubs.sqlite` → `clubs.team-42.sqlite`). Characters
    /// of a text value other than letters, digits, `-` and `_` are written `%XX` (UTF-8 bytes).
    public func output(forScope scope: ScopeDeclaration, value: JSONValue) -> String {
        let output = options.output
        let stem = output.hasSuffix(".sqlite") ? String(output.dropLast(".sqlite".count)) : output
        var name = ""
        for byte in (value.keyString ?? "").utf8 {
            let character = Character(Unicode.Scalar(byte))
            let plain = byte < 0x80 && (character.isLetter || character.isNumber || byte == 0x2D || byte == 0x5F)
            name += plain ? String(character) : String(format: "%%%02X", byte)
        }
        return "\(stem).\(scope.name)-\(name).sqlite"
    }

    /// Cuts the seeds `seeds` asks for from the complete work file `writer`, each published with
    /// its manifest (and `.gz` with ``Options/gzip``).
    func cut(_ writer: SeedWriter, by seeds: ScopeSeeds, info: SchemaInfo) async throws -> [ScopeSeed] {
        guard let scope = writer.schema.scope else {
            throw SeedError(
                .unusable,
                "\(info.dataset) declares no scope: seeds per scope need a dataset with one (PROTOCOL.md §10)")
        }
        if let held = try await writer.scopes() {
            throw SeedError(
                .unusable,
                "the token reads \(scope.name) \(held.compactMap(\.keyString).joined(separator: ", ")) alone: cut seeds per \(scope.name) with a token of every value (a static read token), or build one \(scope.name)'s seed with its own token"
            )
        }
        let values = try await Self.values(seeds, of: scope, in: writer)
        var cut: [ScopeSeed] = []
        for value in values {
            let files = SeedFiles(output: output(forScope: scope, value: value))
            SeedPublisher.removeLeftovers(of: files)
            files.partial.remove()
            let part = try await writer.writeScope(value, at: files.partial.path, pageSize: options.pageSize)
            do {
                try await part.finish(to: files.finished)
            } catch {
                try? part.close()
                files.partial.remove()
                throw error
            }
            let manifest = try SeedPublisher(files: files, finished: files.finished, options: options).publish()
            cut.append(ScopeSeed(value: value, output: files.output, manifest: manifest))
        }
        return cut
    }

    /// The values `seeds` names, typed as `scope` says, in key order, each once.
    private static func values(_ seeds: ScopeSeeds, of scope: ScopeDeclaration, in writer: SeedWriter) async throws
        -> [JSONValue]
    {
        let present = try await writer.scopeValues()
        guard case .only(let name, let given) = seeds else { return present }
        guard name == scope.name else {
            throw SeedError(
                .unusable, "the dataset's scope is '\(scope.name)', not '\(name)': use --scope \(scope.name)=VALUE")
        }
        var values: [JSONValue] = []
        for text in given {
            switch scope.type {
            case .integer:
                guard let number = Int64(text) else {
                    throw SeedError(.unusable, "\(scope.name) values are integers; '\(text)' is not one")
                }
                values.append(.int(number))
            case .text: values.append(.string(text))
            }
        }
        let unique = Dictionary(values.map { ($0.keyString ?? "", $0) }) { first, _ in first }.values
        return unique.sorted(by: JSONValue.keyPrecedes)
    }
}
