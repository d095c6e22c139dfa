import Glibc
import HandoffBrowserHost
import HandoffCommandLine
import HandoffCore
import HandoffDocuments
import HandoffTransport

// One executable for every program: the package installs it once and links each
// program's name to it (the fourfold static copy of the runtime was most of the
// package). The name it is called by picks the program, as busybox does;
// `handoff PROGRAM [arguments]` works too.
let programs: [(name: String, main: ([String]) -> Never)] = [
    ("handoffd", DaemonProgram.main),
    ("handoff-peer", PeerProgram.main),
    ("handoff-notify", NotifyProgram.main),
    ("handoff-documents", { DocumentsCommand.main(arguments: Array($0.dropFirst())) }),
    ("handoff-webext-host", { exit(WebExtensionHost.main(arguments: $0)) }),
    ("handoff-ble-check", BLECheckProgram.main),
    ("handoff-launch", LaunchProgram.main),
]

@MainActor func program(named path: String) -> (([String]) -> Never)? {
    let name = path.split(separator: "/").last.map(String.init) ?? path
    return programs.first { $0.name == name }?.main
}

let commandLine = CommandLine.arguments
if let main = program(named: commandLine.first ?? "") { main(commandLine) }
if commandLine.count > 1, let main = program(named: commandLine[1]) { main(Array(commandLine.dropFirst())) }
if commandLine.dropFirst().first == "--version" {
    print(HandoffVersion.line(program: "handoff"))
    exit(0)
}
let usage = """
    handoff: one program for all of Handoff's commands; call it by a command's name (the links the
    package installs) or as 'handoff COMMAND [arguments]'. Commands: \(programs.map(\.name).joined(separator: ", ")).

    """
if commandLine.dropFirst().first == "--help" {
    print(usage, terminator: "")
    exit(0)
}
writeStandardError(usage)
exit(UsageError.exitCode)
