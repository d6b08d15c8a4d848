import Foundation

// Built by `scripts/suites/fuzz.sh` with `--sanitize=fuzzer --sanitize=address -Xswiftc -DSEEDSYNC_FUZZ`,
// the executable is a libFuzzer target: libFuzzer's `main` runs the target that
// `SEEDSYNC_FUZZ_TARGET` names. Built plainly (`swift build`), it replays inputs through the same
// targets without libFuzzer, which is how a crash libFuzzer reported is looked at in a debugger.

/// Where a run of one target keeps its state.
nonisolated(unsafe) private var session: (target: FuzzTarget, workspace: FuzzWorkspace)?

/// Starts `target`, or writes its corpus and exits when `corpusDirectory` is given.
private func start(_ target: FuzzTarget, corpusDirectory: String?) {
    do {
        let workspace = try FuzzWorkspace.make()
        if let corpusDirectory {
            try FuzzCorpus.write(for: target, to: corpusDirectory, from: workspace)
            exit(0)
        }
        session = (target, workspace)
    } catch {
        FileHandle.standardError.write(Data("seed-fuzz: cannot start \(target.rawValue): \(error)\n".utf8))
        exit(1)
    }
}

#if SEEDSYNC_FUZZ
@_cdecl("LLVMFuzzerInitialize")
public func initialize(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>
) -> Int32 {
    let environment = ProcessInfo.processInfo.environment
    guard let name = environment["SEEDSYNC_FUZZ_TARGET"], let target = FuzzTarget(rawValue: name) else {
        let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")
        FileHandle.standardError.write(Data("seed-fuzz: set SEEDSYNC_FUZZ_TARGET to one of \(names)\n".utf8))
        exit(2)
    }
    start(target, corpusDirectory: environment["SEEDSYNC_FUZZ_WRITE_CORPUS"])
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    guard let session else { return 0 }
    let input = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    session.target.run(input, in: session.workspace)
    return 0
}
#else
/// `seed-fuzz TARGET PATH...` runs each file (a folder: each file in it) through `TARGET`;
/// `seed-fuzz TARGET --corpus FOLDER` writes the target's corpus.
@main
enum SeedFuzz {
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        guard let name = arguments.first, let target = FuzzTarget(rawValue: name), arguments.count > 1 else {
            let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: "|")
            print("usage: seed-fuzz \(names) (PATH... | --corpus FOLDER)")
            exit(2)
        }
        start(target, corpusDirectory: arguments[1] == "--corpus" ? arguments.dropFirst(2).first : nil)
        var count = 0
        for path in arguments.dropFirst() {
            for file in files(at: path) {
                guard let input = FileManager.default.contents(atPath: file) else { continue }
                session!.target.run(Array(input), in: session!.workspace)
                count += 1
            }
        }
        print("\(count) inputs ran through \(target.rawValue) without a failure")
    }

    private static func files(at path: String) -> [String] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: path) else { return [path] }
        return names.sorted().map { URL(fileURLWithPath: path).appendingPathComponent($0).path }
    }
}
#endif
