import Foundation

/// A fresh directory under the system's temporary folder, removed when the body returns.
///
/// ```swift
/// try await withTemporaryDirectory { directory in
///     let path = directory.appendingPathComponent("server.sqlite").path
/// }
/// ```
public func withTemporaryDirectory<T>(_ body: (URL) async throws -> T) async throws -> T {
    let directory = FileManager.default.temporaryDirectory
        .appendingPathComponent("seedsync-tests-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    return try await body(directory)
}

/// A file with `contents` in a fresh folder of its own, both removed when the value goes away.
///
/// ```swift
/// let file = try TemporaryFile(named: "books.ndjson", contents: lines)
/// try await store.load(ndjsonFile: file.path, into: "books")
/// ```
public final class TemporaryFile: Sendable {
    public let path: String
    private let folder: URL

    public init(named name: String, contents: String) throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "seedsync-tests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        path = folder.appendingPathComponent(name).path
        try contents.write(toFile: path, atomically: true, encoding: .utf8)
    }

    deinit { try? FileManager.default.removeItem(at: folder) }
}
