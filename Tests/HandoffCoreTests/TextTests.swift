import HandoffCore
import Testing

/// The few text helpers that stand in for full Foundation's (no ICU in the programs).
@Suite struct TextTests {
    @Test func trimmingSpacesKeepsNewlinesAndInnerSpaces() {
        #expect("  a b\t".trimmingSpaces() == "a b")
        #expect(" \t ".trimmingSpaces() == "")
        #expect("\nx\n".trimmingSpaces() == "\nx\n")
        #expect("\u{00A0}x\u{2003}".trimmingSpaces() == "x")
        #expect("k = v"[...].split(separator: "=").map { $0.trimmingSpaces() } == ["k", "v"])
    }

    @Test func trimmingWhitespaceTakesNewlinesToo() {
        #expect("\n\t x y \r\n".trimmingWhitespace() == "x y")
        #expect("".trimmingWhitespace() == "")
    }

    @Test func paddedFillsToAWidthAndNeverCuts() {
        #expect("ab".padded(to: 4) == "ab  ")
        #expect("abcdef".padded(to: 4) == "abcdef")
        #expect("é".padded(to: 2) == "é ")
    }

    @Test(arguments: [
        (0.0, 1, "0.0"), (1.25, 1, "1.3"), (1.24, 1, "1.2"), (63.99, 1, "64.0"), (1048576.0 / 1048576, 1, "1.0"),
        (0.05, 2, "0.05"), (-2.5, 0, "-3"), (-0.04, 1, "0.0"), (12.0, 3, "12.000"),
    ])
    func decimalPrintsAsPercentF(value: Double, places: Int, expected: String) {
        #expect(String.decimal(value, places: places) == expected)
    }
}
