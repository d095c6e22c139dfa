import FoundationEssentials
import Glibc
import HandoffBrowserHost
import HandoffCommandLine
import HandoffCore
import HandoffKit
import HandoffTransport

enum ExitCode {
    static let success: Int32 = 0
    static let failure: Int32 = 1
    static let usage = UsageError.exitCode
    /// sysexits.h EX_UNAVAILABLE: the daemon is not there.
    static let unavailable: Int32 = 69
}

func printError(_ text: String) {
    writeStandardError((text + "\n"))
}

func usageFailure(_ error: UsageError, command: CommandSpec?) -> Never {
    printError("Error: \(error)")
    if let command {
        printError("Usage: handoff-peer \(command.usage)\nSee 'handoff-peer \(command.name) --help'.")
    } else {
        printError("Usage: handoff-peer [--socket PATH] COMMAND [options]\nSee 'handoff-peer --help'.")
    }
    exit(ExitCode.usage)
}

func failure(_ error: HandoffError) -> Never {
    printError("Error: \(error.message)\nFix: \(error.fix)")
    exit(error.code == .daemonUnavailable ? ExitCode.unavailable : ExitCode.failure)
}


/// handoff-peer: the terminal client of the local API.
enum PeerProgram {
    static func main(_ commandLine: [String]) -> Never {
        // Global options come before the command.
        var tokens = Array(commandLine.dropFirst())
        var socketPath: String?
        while let first = tokens.first, first.hasPrefix("-") {
            tokens.removeFirst()
            if first == "--help" || first == "-h" {
                print(Commands.overview, terminator: "")
                exit(ExitCode.success)
            } else if first == "--version" {
                print(HandoffVersion.line(program: "handoff-peer"))
                exit(ExitCode.success)
            } else if first == "--socket" {
                guard let value = tokens.first else { usageFailure(.missingValue(option: "--socket", valueName: "PATH"), command: nil) }
                socketPath = value
                tokens.removeFirst()
            } else if first.hasPrefix("--socket=") {
                socketPath = String(first.dropFirst("--socket=".count))
            } else {
                usageFailure(.unknownOption(first, suggestion: editDistance(first, "--socket") <= 2 ? "--socket" : nil), command: nil)
            }
        }
        guard let name = tokens.first else {
            print(Commands.overview, terminator: "")
            exit(ExitCode.usage)
        }
        if name == "help" {
            if let topic = tokens.dropFirst().first, let command = Commands.all.first(where: { $0.name == topic }) {
                print(command.help, terminator: "")
            } else {
                print(Commands.overview, terminator: "")
            }
            exit(ExitCode.success)
        }
        guard let command = Commands.all.first(where: { $0.name == name }) else {
            let closest = Commands.all.map(\.name).min { editDistance($0, name) < editDistance($1, name) }
            usageFailure(.unknownCommand(name, suggestion: closest.flatMap { editDistance($0, name) <= 2 ? $0 : nil }), command: nil)
        }
        let arguments: ParsedArguments
        do {
            arguments = try command.parse(Array(tokens.dropFirst()))
        } catch {
            usageFailure(error, command: command)
        }
        if arguments.wantsHelp {
            print(command.help, terminator: "")
            exit(ExitCode.success)
        }
        do {
            try Commands.validate(command.name, arguments)
        } catch {
            usageFailure(error, command: command)
        }

        do throws(HandoffError) {
            let runner = try Runner(socketPath: socketPath, command: command.name, arguments: arguments)
            exit(try runner.run(command.name))
        } catch {
            failure(error)
        }
    }
}
