/// An accept ticket's form: 32 lowercase hex digits (128 random bits) that the
/// accepting client makes and the app that continues checks (HandoffKit's
/// `AcceptTickets`). handoffd only carries it from the accept to `continued`.
public enum AcceptTicket {
    public static let characters = 32

    public static func isWellFormed(_ text: String) -> Bool {
        text.utf8.count == characters && text.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }
}
