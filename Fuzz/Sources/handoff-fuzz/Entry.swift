import CFuzzer
import Foundation

/// `handoff-fuzz TARGET [libFuzzer options and corpus directories]` runs one
/// target; `handoff-fuzz list` prints their names. One executable keeps the
/// sanitized build to a single link (Fuzz/README.md).
@main
enum Entry {
    static func main() {
        var arguments = CommandLine.arguments
        guard arguments.count >= 2, arguments[1] != "list" else {
            print(Targets.all.keys.sorted().joined(separator: "\n"))
            exit(arguments.count >= 2 ? 0 : 64)
        }
        guard let target = Targets.all[arguments[1]] else {
            FileHandle.standardError.write(Data("handoff-fuzz: no target '\(arguments[1])'; 'handoff-fuzz list' names them\n".utf8))
            exit(64)
        }
        selected = target
        arguments.remove(at: 1)
        var argc = Int32(arguments.count)
        var cStrings: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        let status = cStrings.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var argv = buffer.baseAddress
            return LLVMFuzzerRunDriver(&argc, &argv, testOneInput)
        }
        exit(status)
    }
}

/// Set once in `main`, before libFuzzer calls in, then only read.
nonisolated(unsafe) private var selected: (@Sendable ([UInt8]) -> Void)?

/// Also the symbol libFuzzer's own main would look for, so the program links
/// whichever main the linker keeps.
@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    selected?(bytes)
    return 0
}
