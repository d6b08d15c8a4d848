/// A failure of a command, printed as it is: what failed, and the flag or variable that helps.
///
/// The libraries' errors say what failed and where; the flags and variables belong to the command
/// line, so a command adds them here:
///
/// ```swift
/// } catch {
///     throw CommandFailure.hinted(error) { ServerOptions.hint(for: $0) ?? Self.hint(for: $0) }
/// }
/// ```
package struct CommandFailure: Error, CustomStringConvertible {
    package let description: String

    package init(_ description: String) { self.description = description }

    /// `error`, followed by `hint(error)` when there is one; `error` itself otherwise, so a caller
    /// still decides by its code.
    package static func hinted(_ error: any Error, by hint: (any Error) -> String?) -> any Error {
        hint(error).map { CommandFailure("\(error); \($0)") } ?? error
    }
}
