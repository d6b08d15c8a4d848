import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a seed could not be written, read or applied to: a ``Code`` to decide by, and a
/// description that names the file or step and says what to do.
///
/// It never holds row values, only file names, type names, keys and revisions. Decide by
/// ``code``, never by the text:
///
/// ```swift
/// do {
///     try await builder.build()
/// } catch let error as SeedError where error.code == .diskFull {
///     // free space, then build again
/// }
/// ```
public struct SeedError: Error, CustomStringConvertible, Sendable, Hashable {
    /// What kind of failure. New codes may be added: a `switch` over it needs a `default`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case notASeed, damaged, invalidData, busy, diskFull, fileSizeLimit, fileSystem, notFound, alreadyExists,
                notResumable, unusable, sqlite, unsigned, badSignature, untrustedKey, invalidKey
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The file is not a SeedSync seed (another SQLite database, not SQLite at all, another format version).
        public static let notASeed = Code(.notASeed)
        /// The file is a seed (or gzip file) whose bytes are damaged: SQLite reports corruption, or
        /// its content does not match its digest or manifest.
        public static let damaged = Code(.damaged)
        /// Data from the server (a page, a change set) does not fit the schema or the revision order.
        public static let invalidData = Code(.invalidData)
        /// Another process has the file open.
        public static let busy = Code(.busy)
        /// The volume holding the file is full. Nothing is wrong with the data: free space and run again.
        public static let diskFull = Code(.diskFull)
        /// The file reached the process's file-size limit (`ulimit -f`).
        public static let fileSizeLimit = Code(.fileSizeLimit)
        /// Reading or writing the file failed: an I/O error, no permission, a read-only volume.
        public static let fileSystem = Code(.fileSystem)
        /// A file that must exist is not there.
        public static let notFound = Code(.notFound)
        /// A file that must not exist is there (a new seed's path).
        public static let alreadyExists = Code(.alreadyExists)
        /// An unfinished build cannot be continued: it was started for another schema or type
        /// selection, or the server has moved where it cannot catch up from.
        public static let notResumable = Code(.notResumable)
        /// The request cannot be carried out as asked: a type selection the server cannot serve,
        /// a file left unfinished by another program.
        public static let unusable = Code(.unusable)
        /// SQLite failed for another reason (out of memory, interrupted, an internal error).
        public static let sqlite = Code(.sqlite)
        /// Keys are trusted, but the seed's manifest carries no signature (or there is no manifest).
        public static let unsigned = Code(.unsigned)
        /// A signature by a trusted key does not verify: the manifest was changed after it was signed.
        public static let badSignature = Code(.badSignature)
        /// The manifest is signed, but by no key that is trusted.
        public static let untrustedKey = Code(.untrustedKey)
        /// A signing or public key could not be read: not Ed25519, not PEM or base64.
        public static let invalidKey = Code(.invalidKey)

        public var description: String { base.rawValue }
    }

    public let code: Code
    public let description: String

    public init(_ code: Code, _ description: String) {
        self.code = code
        self.description = description
    }

    /// Whether the failure is the storage's, not the data's: a full disk, a file-size limit, an I/O error.
    public var isStorageFailure: Bool {
        code == .diskFull || code == .fileSizeLimit || code == .fileSystem
    }

    /// Whether the seed was refused by its signature: unsigned, a wrong signature, an unknown key.
    public var isTrustFailure: Bool {
        code == .unsigned || code == .badSignature || code == .untrustedKey
    }

    static func notASeed(_ path: String, _ reason: String) -> Self {
        Self(.notASeed, "\(path) is not a SeedSync seed: \(reason)")
    }

    static func invalidData(_ message: String) -> Self {
        Self(.invalidData, message)
    }

    static func busy(_ path: String) -> Self {
        Self(.busy, "\(path) is in use by another process (another build?); wait for it or remove the file")
    }

    /// The error of a failed system call on `path`, from its `errno`.
    ///
    /// - Parameter action: what was being done, finishing "cannot …": `write /x/seed.sqlite.new`.
    package static func system(_ number: Int32, _ action: String) -> Self {
        switch number {
        case ENOSPC, EDQUOT:
            Self(.diskFull, "cannot \(action): no space left on the device; free space on that volume and run again")
        case EFBIG:
            Self(
                .fileSizeLimit,
                "cannot \(action): the file is larger than this process may write (the file-size limit, ulimit -f); raise the limit and run again"
            )
        case ENOENT:
            Self(.notFound, "cannot \(action): no such file or folder")
        case EACCES, EPERM:
            Self(.fileSystem, "cannot \(action): permission denied")
        case EROFS:
            Self(.fileSystem, "cannot \(action): the volume is read-only")
        default:
            Self(.fileSystem, "cannot \(action): \(String(cString: strerror(number)))")
        }
    }

    /// The error of a failed Foundation file operation (`FileHandle`, `FileManager`, `Data.write`),
    /// named by what was being done and classified by the system error under it.
    package static func file(_ error: any Error, _ action: String) -> Self {
        if let error = error as? SeedError { return error }
        let number = Self.errno(of: error as NSError)
        return number.map { system($0, action) } ?? Self(.fileSystem, "cannot \(action): \(error.localizedDescription)")
    }

    /// The POSIX error number behind a Foundation error, when it carries one.
    private static func errno(of error: NSError) -> Int32? {
        if error.domain == NSPOSIXErrorDomain { return Int32(error.code) }
        if let underlying = error.userInfo[NSUnderlyingErrorKey] as? NSError, let number = errno(of: underlying) {
            return number
        }
        if error.domain == NSCocoaErrorDomain {
            switch error.code {
            case CocoaError.fileWriteOutOfSpace.rawValue: return ENOSPC
            case CocoaError.fileWriteVolumeReadOnly.rawValue: return EROFS
            case CocoaError.fileWriteNoPermission.rawValue, CocoaError.fileReadNoPermission.rawValue: return EACCES
            case CocoaError.fileNoSuchFile.rawValue, CocoaError.fileReadNoSuchFile.rawValue: return ENOENT
            default: return nil
            }
        }
        return nil
    }
}
