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
