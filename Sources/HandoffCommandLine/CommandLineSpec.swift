/// One declaration per command drives parsing, validation messages and
/// `--help`, so help can never disagree with what is parsed.
public struct CommandSpec: Sendable {
    public struct Option: Sendable {
        public let name: String
        /// nil for a flag that takes no value.
        public let valueName: String?
        public let help: String

        public init(_ name: String, value: String? = nil, help: String) {
            self.name = name
            self.valueName = value
            self.help = help
        }
    }

    public struct Argument: Sendable {
        public let name: String
        public let help: String
        public let optional: Bool

        public init(_ name: String, optional: Bool = false, help: String) {
            self.name = name
            self.help = help
            self.optional = optional
        }
    }

    public let name: String
    public let abstract: String
    public let arguments: [Argument]
    public let options: [Option]
    public let discussion: String?

    public init(name: String, abstract: String, arguments: [Argument] = [], options: [Option] = [], discussion: String? = nil) {
        self.name = name
        self.abstract = abstract
        self.arguments = arguments
        self.options = options + [Option("help", help: "Show this help and exit.")]
        self.discussion = discussion
    }

    /// `--version`, for a program's top-level spec: print HandoffVersion's line and exit 0.
    public static let versionOption = Option("version", help: "Print the version and exit.")

    public var usage: String {
        var parts = [name]
        if options.count > 1 { parts.append("[options]") }
        for argument in arguments { parts.append(argument.optional ? "[\(argument.name)]" : argument.name) }
        return parts.joined(separator: " ")
    }

    public var help: String {
        var text = "\(abstract)\n\nUsage: \(usage)\n"
        if !arguments.isEmpty {
            text += "\nArguments:\n"
            for argument in arguments { text += Self.row(argument.name, argument.help) }
        }
        text += "\nOptions:\n"
        for option in options {
            text += Self.row("--\(option.name)" + (option.valueName.map { " \($0)" } ?? ""), option.help)
        }
        if let discussion { text += "\n\(discussion)\n" }
        return text
    }

    public static func row(_ left: String, _ right: String) -> String {
        let padded = left.count < 24 ? left + String(repeating: " ", count: 24 - left.count) : left + "\n" + String(repeating: " ", count: 26)
        return "  \(padded)\(right)\n"
    }

    /// Parses an explicit argument list (no globals), so tests need no real command line.
    public func parse(_ tokens: [String]) throws(UsageError) -> ParsedArguments {
        var parsed = ParsedArguments()
        var index = 0
        var onlyPositionals = false
        while index < tokens.count {
            let token = tokens[index]
            index += 1
            if onlyPositionals || !token.hasPrefix("-") || token == "-" {
                parsed.positionals.append(token)
                continue
            }
            if token == "--" {
                onlyPositionals = true
                continue
            }
            if token == "-h" {
                parsed.flags.insert("help")
                continue
            }
            guard token.hasPrefix("--") else { throw .unknownOption(token, suggestion: nil) }
            var name = String(token.dropFirst(2))
            var inlineValue: String?
            if let equals = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            guard let option = options.first(where: { $0.name == name }) else {
                throw .unknownOption(token, suggestion: suggestion(for: name).map { "--\($0)" })
            }
            if option.valueName == nil {
                guard inlineValue == nil else { throw .unexpectedValue(option: token) }
                parsed.flags.insert(name)
            } else if let inlineValue {
                parsed.values[name] = inlineValue
            } else {
                guard index < tokens.count else { throw .missingValue(option: "--\(name)", valueName: option.valueName!) }
                parsed.values[name] = tokens[index]
                index += 1
            }
        }
        if parsed.flags.contains("help") || parsed.flags.contains("version") { return parsed }
        let required = arguments.filter { !$0.optional }.count
        if parsed.positionals.count < required {
            throw .missingArgument(arguments[parsed.positionals.count].name)
        }
        // An argument named "NAME..." takes any number of values.
        if parsed.positionals.count > arguments.count, !(arguments.last?.name.hasSuffix("...") ?? false) {
            throw .unexpectedArgument(parsed.positionals[arguments.count])
        }
        return parsed
    }

    private func suggestion(for name: String) -> String? {
        let scored = options.map { ($0.name, editDistance($0.name, name)) }.min { $0.1 < $1.1 }
        guard let (best, distance) = scored, distance <= max(2, name.count / 3) else { return nil }
        return best
    }
}

public struct ParsedArguments: Sendable {
    public var values: [String: String] = [:]
    public var flags: Set<String> = []
    public var positionals: [String] = []

    public init() {}

    public var wantsHelp: Bool { flags.contains("help") }
    public var wantsVersion: Bool { flags.contains("version") }
    public func flag(_ name: String) -> Bool { flags.contains(name) }
    public func value(_ name: String) -> String? { values[name] }
}

/// Misuse of a command line; printed as "Error: ...", the usage and a pointer to --help, exit 64.
public enum UsageError: Error, Equatable, Sendable, CustomStringConvertible {
    case unknownOption(String, suggestion: String?)
    case missingValue(option: String, valueName: String)
    case unexpectedValue(option: String)
    case missingArgument(String)
    case unexpectedArgument(String)
    case unknownCommand(String, suggestion: String?)
    case invalidValue(option: String, reason: String)

    public var description: String {
        switch self {
        case let .unknownOption(option, suggestion):
            "Unknown option '\(option)'." + (suggestion.map { " Did you mean '\($0)'?" } ?? "")
        case let .missingValue(option, valueName): "Missing value for '\(option) \(valueName)'."
        case let .unexpectedValue(option): "'\(option)' takes no value."
        case let .missingArgument(name): "Missing \(name)."
        case let .unexpectedArgument(argument): "Unexpected argument '\(argument)'."
        case let .unknownCommand(command, suggestion):
            "Unknown command '\(command)'." + (suggestion.map { " Did you mean '\($0)'?" } ?? "")
        case let .invalidValue(option, reason): "Invalid value for \(option): \(reason)"
        }
    }

    /// sysexits.h EX_USAGE.
    public static let exitCode: Int32 = 64
}

/// Levenshtein distance, for "did you mean" suggestions.
public func editDistance(_ lhs: String, _ rhs: String) -> Int {
    let a = Array(lhs), b = Array(rhs)
    guard !a.isEmpty else { return b.count }
    guard !b.isEmpty else { return a.count }
    var previous = Array(0...b.count)
    for i in 1...a.count {
        var current = [i] + Array(repeating: 0, count: b.count)
        for j in 1...b.count {
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
        }
        previous = current
    }
    return previous[b.count]
}
