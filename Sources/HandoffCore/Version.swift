/// The release, as the top entry of Packaging/debian/changelog names it (a unit
/// test holds the two equal): what every program's `--version` prints.
public enum HandoffVersion {
    public static let current = "0.1.0"

    /// "handoffd 0.1.0", the line `--version` prints.
    public static func line(program: String) -> String { "\(program) \(current)" }
}
