import Glibc
import HandoffCore

extension CommandSpec {
    /// A program's start, the same for every handoff program: its arguments parsed, or it ends
    /// here: misuse prints the error, the usage and where help is, exit status 64; `--help` and
    /// `--version` print to standard output, exit status 0.
    public func argumentsOrExit(_ arguments: [String]) -> ParsedArguments {
        let parsed: ParsedArguments
        do {
            parsed = try parse(arguments)
        } catch {
            exitWithUsage("\(error)")
        }
        if parsed.wantsHelp {
            print(help, terminator: "")
            exit(0)
        }
        if parsed.wantsVersion {
            print(HandoffVersion.line(program: name))
            exit(0)
        }
        return parsed
    }

    /// "Error: MESSAGE", the usage and where help is, on standard error; exit status 64.
    public func exitWithUsage(_ message: String) -> Never {
        let text = Array("Error: \(message)\nUsage: \(usage)\nSee '\(name) --help'.\n".utf8)
        var written = 0
        while written < text.count {
            let count = text[written...].withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            written += count
        }
        exit(UsageError.exitCode)
    }
}
