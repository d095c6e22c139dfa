import HandoffCommandLine
import Testing

@Suite struct CommandLineSpecTests {
    static let accept = CommandSpec(
        name: "handoff-peer accept",
        abstract: "Continue the activity a peer offers.",
        arguments: [.init("PEER", help: "Device id (or a unique prefix) or name.")],
        options: [
            .init("timeout", value: "MS", help: "Give up after MS milliseconds."),
            .init("json", help: "Print the activity as JSON."),
            .init("state-directory-override", value: "PATH", help: "A long option that wraps."),
        ],
        discussion: "The peer must trust this device."
    )

    static let list = CommandSpec(name: "handoff-peer list", abstract: "List peers in range.",
                                  arguments: [.init("FILTER", optional: true, help: "Only names containing this.")])

    private func parseError(_ tokens: [String], spec: CommandSpec = accept) -> UsageError? {
        #expect(throws: UsageError.self) { try spec.parse(tokens) }
    }

    @Test func helpIsGolden() {
        let expected = """
            Continue the activity a peer offers.

            Usage: handoff-peer accept [options] PEER

            Arguments:
              PEER                    Device id (or a unique prefix) or name.

            Options:
              --timeout MS            Give up after MS milliseconds.
              --json                  Print the activity as JSON.
              --state-directory-override PATH
                                      A long option that wraps.
              --help                  Show this help and exit.

            The peer must trust this device.

            """
        #expect(Self.accept.help == expected)
    }

    @Test func helpWithoutOptionsOrDiscussion() {
        let bare = CommandSpec(name: "handoff-peer id", abstract: "Print this device's id.")
        #expect(bare.usage == "handoff-peer id")
        #expect(bare.help == """
            Print this device's id.

            Usage: handoff-peer id

            Options:
              --help                  Show this help and exit.

            """)
        #expect(Self.list.usage == "handoff-peer list [FILTER]")
    }

    @Test func rowPadsTo24Columns() {
        #expect(CommandSpec.row("--x", "help") == "  --x" + String(repeating: " ", count: 21) + "help\n")
        #expect(CommandSpec.row(String(repeating: "y", count: 23), "h") == "  " + String(repeating: "y", count: 23) + " h\n")
        #expect(CommandSpec.row(String(repeating: "y", count: 24), "h") == "  " + String(repeating: "y", count: 24) + "\n" + String(repeating: " ", count: 26) + "h\n")
    }

    @Test func optionWithSeparateValue() throws {
        let parsed = try Self.accept.parse(["--timeout", "500", "NHJ2"])
        #expect(parsed.value("timeout") == "500")
        #expect(parsed.positionals == ["NHJ2"])
        #expect(!parsed.flag("json"))
        #expect(!parsed.wantsHelp)
    }

    @Test func optionWithInlineValue() throws {
        let parsed = try Self.accept.parse(["NHJ2", "--timeout=500"])
        #expect(parsed.value("timeout") == "500")
        #expect(try Self.accept.parse(["NHJ2", "--timeout="]).value("timeout") == "")
        #expect(try Self.accept.parse(["NHJ2", "--timeout=a=b"]).value("timeout") == "a=b")
        // The value after a separate option can itself start with dashes.
        #expect(try Self.accept.parse(["NHJ2", "--timeout", "--json"]).value("timeout") == "--json")
    }

    @Test func flags() throws {
        let parsed = try Self.accept.parse(["--json", "NHJ2"])
        #expect(parsed.flag("json"))
        #expect(parsed.flags == ["json"])
        #expect(parsed.values.isEmpty)
    }

    @Test func laterValuesWin() throws {
        #expect(try Self.accept.parse(["--timeout", "1", "--timeout=2", "P"]).value("timeout") == "2")
    }

    @Test func doubleDashEndsOptions() throws {
        let parsed = try Self.accept.parse(["--", "--json"])
        #expect(parsed.positionals == ["--json"])
        #expect(!parsed.flag("json"))
        let dash = try Self.accept.parse(["-"])
        #expect(dash.positionals == ["-"])
        let both = try Self.list.parse(["--", "--"])
        #expect(both.positionals == ["--"])
    }

    @Test func missingValue() {
        #expect(parseError(["NHJ2", "--timeout"]) == .missingValue(option: "--timeout", valueName: "MS"))
        #expect(UsageError.missingValue(option: "--timeout", valueName: "MS").description == "Missing value for '--timeout MS'.")
    }

    @Test func unknownOptionSuggestsTheClosest() {
        #expect(parseError(["--timout", "5", "P"]) == .unknownOption("--timout", suggestion: "--timeout"))
        #expect(parseError(["--jsno", "P"]) == .unknownOption("--jsno", suggestion: "--json"))
        #expect(parseError(["--hlep"]) == .unknownOption("--hlep", suggestion: "--help"))
        #expect(parseError(["--timout=5", "P"]) == .unknownOption("--timout=5", suggestion: "--timeout"))
        #expect(parseError(["--zzzzzzzzz", "P"]) == .unknownOption("--zzzzzzzzz", suggestion: nil))
        #expect(parseError(["-x", "P"]) == .unknownOption("-x", suggestion: nil))
        #expect(parseError(["-json", "P"]) == .unknownOption("-json", suggestion: nil))
        #expect(UsageError.unknownOption("--timout", suggestion: "--timeout").description
            == "Unknown option '--timout'. Did you mean '--timeout'?")
        #expect(UsageError.unknownOption("-x", suggestion: nil).description == "Unknown option '-x'.")
    }

    @Test func flagGivenAValue() {
        #expect(parseError(["--json=yes", "P"]) == .unexpectedValue(option: "--json=yes"))
        #expect(parseError(["--help=1"]) == .unexpectedValue(option: "--help=1"))
    }

    @Test func positionalCounts() throws {
        #expect(parseError([]) == .missingArgument("PEER"))
        #expect(parseError(["--json"]) == .missingArgument("PEER"))
        #expect(parseError(["a", "b"]) == .unexpectedArgument("b"))
        #expect(try Self.list.parse([]).positionals == [])
        #expect(try Self.list.parse(["x"]).positionals == ["x"])
        #expect(parseError(["x", "y"], spec: Self.list) == .unexpectedArgument("y"))
        #expect(UsageError.missingArgument("PEER").description == "Missing PEER.")
        #expect(UsageError.unexpectedArgument("b").description == "Unexpected argument 'b'.")
    }

    @Test func helpSkipsPositionalChecks() throws {
        #expect(try Self.accept.parse(["-h"]).wantsHelp)
        #expect(try Self.accept.parse(["--help"]).wantsHelp)
        // --version, where a spec has it, answers before arguments are checked.
        let program = CommandSpec(name: "handoffd", abstract: "d", arguments: [.init("X", help: "x")], options: [CommandSpec.versionOption])
        #expect(try program.parse(["--version"]).wantsVersion)
        #expect(throws: UsageError.self) { try Self.accept.parse(["--version"]) }
        #expect(try Self.accept.parse(["a", "b", "c", "--help"]).wantsHelp)
        // Options are still checked before help is honoured.
        #expect(parseError(["--bogus", "-h"]) != nil)
    }

    @Test func exitCodeIsEXUsage() {
        #expect(UsageError.exitCode == 64)
    }

    @Test func otherDescriptions() {
        #expect(UsageError.unexpectedValue(option: "--json=1").description == "'--json=1' takes no value.")
        #expect(UsageError.unknownCommand("lsit", suggestion: "list").description == "Unknown command 'lsit'. Did you mean 'list'?")
        #expect(UsageError.invalidValue(option: "--timeout", reason: "not a number").description
            == "Invalid value for --timeout: not a number")
    }

    @Test func editDistances() {
        #expect(editDistance("kitten", "sitting") == 3)
        #expect(editDistance("", "abc") == 3)
        #expect(editDistance("abc", "") == 3)
        #expect(editDistance("same", "same") == 0)
        #expect(editDistance("flaw", "lawn") == 2)
        #expect(editDistance("ab", "ba") == 2)
    }
}
