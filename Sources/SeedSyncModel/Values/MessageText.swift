extension String {
    /// The most characters of a client's text that an error message repeats.
    package static let echoLimit = 64

    /// This text as an error message may repeat it: whole when it has at most 64 characters,
    /// else its first 64 characters and "…".
    ///
    /// Messages name the type, key, field or header a client sent; clipping keeps an answer and a
    /// log line small whatever the client sent.
    ///
    /// ```swift
    /// throw SyncStoreError.unknownType(name) // "unknown type 'xxxx…'" for a 10,000-character name
    /// ```
    package var clippedForMessage: String {
        guard let end = index(startIndex, offsetBy: Self.echoLimit, limitedBy: endIndex), end != endIndex else {
            return self
        }
        return self[..<end] + "…"
    }
}
