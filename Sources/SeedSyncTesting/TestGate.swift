/// Lets at most `width` bodies run at once, the rest waiting their turn in order: for matrices of
/// many parameterized cases, each with its own servers and connections, that must not all run at
/// once (PostgreSQL's `max_connections`, two cores).
///
/// ```swift
/// static let gate = TestGate(width: 4)
/// @Test(arguments: cases) func each(_ value: Case) async throws {
///     try await Self.gate.run { try await check(value) }
/// }
/// ```
public actor TestGate {
    private let width: Int
    private var running = 0
    private var waiting: [CheckedContinuation<Void, Never>] = []

    public init(width: Int) {
        self.width = width
    }

    public func run<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        await enter()
        defer { leave() }
        return try await body()
    }

    private func enter() async {
        guard running >= width else {
            running += 1
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    private func leave() {
        if waiting.isEmpty {
            running -= 1
        } else {
            waiting.removeFirst().resume()
        }
    }
}
