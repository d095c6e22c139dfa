/// A targetContentIdentifier in the form `scheme:opaque-id` ("document:3F2A…").
/// One parser, used wherever an identifier is read, fails closed: anything that
/// is not exactly this shape is refused rather than guessed at.
public struct ContentIdentifier: Hashable, Sendable, CustomStringConvertible {
    public let scheme: String
    public let opaqueID: String

    public init?(scheme: String, opaqueID: String) {
        guard Self.isValidScheme(scheme), Self.isValidOpaque(opaqueID) else { return nil }
        self.scheme = scheme
        self.opaqueID = opaqueID
    }

    public init?(parsing text: String) {
        guard text.utf8.count <= ActivityLimits.contentIdentifierBytes,
              let colon = text.firstIndex(of: ":") else { return nil }
        self.init(scheme: String(text[..<colon]), opaqueID: String(text[text.index(after: colon)...]))
    }

    public var description: String { "\(scheme):\(opaqueID)" }

    private static func isValidScheme(_ scheme: String) -> Bool {
        let scalars = Array(scheme.unicodeScalars)
        guard let first = scalars.first, ("a"..."z").contains(first), scalars.count <= 32 else { return false }
        return scalars.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "-" || $0 == "." }
    }

    private static func isValidOpaque(_ opaque: String) -> Bool {
        !opaque.isEmpty && opaque.unicodeScalars.allSatisfy {
            $0.isASCII && $0.value > 0x20 && $0.value < 0x7f
        }
    }
}
