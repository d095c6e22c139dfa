import HandoffCore

/// The freedesktop recently-used list (`~/.local/share/recently-used.xbel`,
/// the Desktop Bookmark Spec over XBEL) that GtkRecentManager and KDE
/// Frameworks write for every file an app opens or saves. Pure and bounded: the
/// file is another program's, so its size, the number of bookmarks and every
/// attribute are capped, and anything it does not understand is skipped, not
/// trusted. Only what the documents publisher needs is read.
public enum RecentlyUsed {
    /// A list this long is not one GTK wrote for a person (GTK keeps at most a few thousand items).
    public static let maximumFileBytes = 8 * 1024 * 1024
    public static let maximumBookmarks = 10_000
    static let maximumAttributeBytes = 8 * 1024

    public struct Application: Equatable, Sendable {
        /// The app's name as it registered ("Mousepad", "Text Editor", "org.gnome.TextEditor").
        public var name: String
        /// Its command line with %u / %f for the file ("mousepad %u").
        public var exec: String
        public var modifiedMillis: UInt64
    }

    public struct Bookmark: Equatable, Sendable {
        public var href: String
        public var mimeType: String?
        public var modifiedMillis: UInt64
        public var visitedMillis: UInt64
        public var applications: [Application]

        /// When a person last opened or saved it: the latest of its own times and its apps'.
        public var lastUsedMillis: UInt64 {
            max(modifiedMillis, visitedMillis, applications.map(\.modifiedMillis).max() ?? 0)
        }

        /// The app that touched it last.
        public var application: Application? {
            applications.max { $0.modifiedMillis < $1.modifiedMillis }
        }

        /// The local path of a file: URI, percent-decoded; nil for anything else (remote, malformed).
        public var path: String? { RecentlyUsed.localPath(fileURI: href) }
    }

    public enum ParseError: Error, Equatable {
        case tooLarge(Int)
        case notXBEL
    }

    /// Every bookmark, in file order. A bookmark with a broken part is skipped.
    public static func parse(_ bytes: [UInt8]) throws(ParseError) -> [Bookmark] {
        guard bytes.count <= maximumFileBytes else { throw .tooLarge(bytes.count) }
        var scanner = TagScanner(bytes: bytes)
        var bookmarks: [Bookmark] = []
        var current: Bookmark?
        var sawXBEL = false
        while let tag = scanner.nextTag() {
            switch tag.name {
            case "xbel" where !tag.closing:
                sawXBEL = true
            case "bookmark" where !tag.closing:
                guard let href = tag.attributes["href"] else { current = nil; continue }
                current = Bookmark(href: href, mimeType: nil, modifiedMillis: timestamp(tag.attributes["modified"]),
                                   visitedMillis: timestamp(tag.attributes["visited"]), applications: [])
                if tag.selfClosing, let done = current {
                    bookmarks.append(done)
                    current = nil
                }
            case "bookmark" where tag.closing:
                if let done = current { bookmarks.append(done) }
                current = nil
            case "mime:mime-type" where !tag.closing:
                current?.mimeType = tag.attributes["type"]
            case "bookmark:application" where !tag.closing:
                guard let name = tag.attributes["name"], let exec = tag.attributes["exec"] else { continue }
                if (current?.applications.count ?? 0) < 64 {
                    current?.applications.append(Application(name: name, exec: unquoteExec(exec), modifiedMillis: timestamp(tag.attributes["modified"])))
                }
            default:
                continue
            }
            if bookmarks.count >= maximumBookmarks { break }
        }
        guard sawXBEL else { throw .notXBEL }
        return bookmarks
    }

    /// GTK writes exec as `'mousepad %u'` (quoted once more); the quotes are not part of the command.
    static func unquoteExec(_ exec: String) -> String {
        if exec.count >= 2, exec.hasPrefix("'"), exec.hasSuffix("'") { return String(exec.dropFirst().dropLast()) }
        return exec
    }

    /// "2026-12-02T02:50:00.123456Z" (what GLib writes) to Unix milliseconds; 0 when it is not that.
    public static func timestamp(_ text: String?) -> UInt64 {
        guard let text else { return 0 }
        let bytes = Array(text.utf8)
        func number(_ range: Range<Int>) -> Int? {
            guard range.upperBound <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[range] {
                guard (0x30...0x39).contains(byte) else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            return value
        }
        guard bytes.count >= 20, bytes[4] == 0x2D, bytes[7] == 0x2D, bytes[10] == 0x54, bytes[13] == 0x3A, bytes[16] == 0x3A,
              let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
              let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
              (1970...9999).contains(year), (1...12).contains(month), (1...31).contains(day),
              hour < 24, minute < 60, second < 61 else { return 0 }
        var index = 19
        var millis = 0
        if index < bytes.count, bytes[index] == 0x2E {
            index += 1
            var digits = 0
            while index < bytes.count, (0x30...0x39).contains(bytes[index]) {
                if digits < 3 { millis = millis * 10 + Int(bytes[index] - 0x30) }
                digits += 1
                index += 1
            }
            for _ in digits..<max(digits, 3) { millis *= 10 }
        }
        guard index == bytes.count - 1, bytes[index] == 0x5A else { return 0 } // only UTC ("Z"), as GLib writes
        // Days from the civil date (Howard Hinnant's algorithm).
        let y = month <= 2 ? year - 1 : year
        let era = y / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        let days = era * 146_097 + doe - 719_468
        return UInt64(((days * 24 + hour) * 60 + minute) * 60 + second) * 1000 + UInt64(millis)
    }

    /// "file:///home/ana/My%20notes.md" -> "/home/ana/My notes.md"; nil for other schemes,
    /// a host part, bad escapes, NUL, or bytes that are not UTF-8.
    public static func localPath(fileURI: String) -> String? {
        let prefix = "file://"
        guard fileURI.hasPrefix(prefix) else { return nil }
        let rest = Array(fileURI.utf8.dropFirst(prefix.count))
        guard rest.first == UInt8(ascii: "/") else { return nil } // file://host/... is not this machine's
        var decoded: [UInt8] = []
        var index = 0
        while index < rest.count {
            let byte = rest[index]
            if byte == UInt8(ascii: "%") {
                guard index + 2 < rest.count, let high = hexValue(rest[index + 1]), let low = hexValue(rest[index + 2]) else { return nil }
                decoded.append(high << 4 | low)
                index += 3
            } else {
                decoded.append(byte)
                index += 1
            }
        }
        guard !decoded.contains(0) else { return nil }
        return String(validating: decoded, as: UTF8.self)
    }

    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: byte - 0x30
        case 0x41...0x46: byte - 0x41 + 10
        case 0x61...0x66: byte - 0x61 + 10
        default: nil
        }
    }
}

/// Start and end tags with their attributes, in order; text, comments, CDATA and
/// processing instructions are skipped. Enough for the XBEL that GLib writes, and
/// never more work than one pass over the bytes.
struct TagScanner {
    struct Tag {
        var name: String
        var closing: Bool
        var selfClosing: Bool
        var attributes: [String: String]
    }

    let bytes: [UInt8]
    var index = 0

    init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    mutating func nextTag() -> Tag? {
        while index < bytes.count {
            guard let open = bytes[index...].firstIndex(of: UInt8(ascii: "<")) else { index = bytes.count; return nil }
            index = open + 1
            if starts(with: "!--") {
                index = find("-->").map { $0 + 3 } ?? bytes.count
                continue
            }
            if starts(with: "![CDATA[") {
                index = find("]]>").map { $0 + 3 } ?? bytes.count
                continue
            }
            if starts(with: "?") || starts(with: "!") {
                index = bytes[index...].firstIndex(of: UInt8(ascii: ">")).map { $0 + 1 } ?? bytes.count
                continue
            }
            if let tag = readTag() { return tag }
        }
        return nil
    }

    private func starts(with text: String) -> Bool {
        let pattern = Array(text.utf8)
        return index + pattern.count <= bytes.count && Array(bytes[index..<index + pattern.count]) == pattern
    }

    private func find(_ text: String) -> Int? {
        let pattern = Array(text.utf8)
        var position = index
        while position + pattern.count <= bytes.count {
            if bytes[position] == pattern[0] && Array(bytes[position..<position + pattern.count]) == pattern { return position }
            position += 1
        }
        return nil
    }

    private static func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }
    private static func isNameByte(_ byte: UInt8) -> Bool {
        !isSpace(byte) && byte != UInt8(ascii: ">") && byte != UInt8(ascii: "/") && byte != UInt8(ascii: "=")
    }

    /// After "<": a name, attributes, then ">" or "/>". nil (and skipped to ">") when malformed.
    private mutating func readTag() -> Tag? {
        var tag = Tag(name: "", closing: false, selfClosing: false, attributes: [:])
        if index < bytes.count, bytes[index] == UInt8(ascii: "/") {
            tag.closing = true
            index += 1
        }
        tag.name = readName()
        guard !tag.name.isEmpty else { return skipTag() }
        while true {
            skipSpace()
            guard index < bytes.count else { return nil }
            if bytes[index] == UInt8(ascii: ">") {
                index += 1
                return tag
            }
            if bytes[index] == UInt8(ascii: "/"), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: ">") {
                index += 2
                tag.selfClosing = true
                return tag
            }
            let name = readName()
            skipSpace()
            guard !name.isEmpty, index < bytes.count, bytes[index] == UInt8(ascii: "=") else { return skipTag() }
            index += 1
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") || bytes[index] == UInt8(ascii: "'") else { return skipTag() }
            let quote = bytes[index]
            index += 1
            guard let end = bytes[index...].firstIndex(of: quote) else { index = bytes.count; return nil }
            let raw = bytes[index..<end]
            index = end + 1
            guard raw.count <= RecentlyUsed.maximumAttributeBytes, let value = Self.unescape(raw) else { continue }
            if tag.attributes.count < 16 { tag.attributes[name] = value }
        }
    }

    private mutating func skipTag() -> Tag? {
        index = bytes[min(index, bytes.count)...].firstIndex(of: UInt8(ascii: ">")).map { $0 + 1 } ?? bytes.count
        return nil
    }

    private mutating func skipSpace() {
        while index < bytes.count, Self.isSpace(bytes[index]) { index += 1 }
    }

    private mutating func readName() -> String {
        let start = index
        while index < bytes.count, Self.isNameByte(bytes[index]), index - start < 64 { index += 1 }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    /// XML's five entities and numeric references; nil for anything else (the attribute is dropped).
    static func unescape(_ raw: ArraySlice<UInt8>) -> String? {
        var out: [UInt8] = []
        out.reserveCapacity(raw.count)
        var index = raw.startIndex
        while index < raw.endIndex {
            let byte = raw[index]
            guard byte == UInt8(ascii: "&") else {
                out.append(byte)
                index += 1
                continue
            }
            guard let semicolon = raw[index...].prefix(12).firstIndex(of: UInt8(ascii: ";")) else { return nil }
            let entity = String(decoding: raw[(index + 1)..<semicolon], as: UTF8.self)
            switch entity {
            case "amp": out.append(UInt8(ascii: "&"))
            case "lt": out.append(UInt8(ascii: "<"))
            case "gt": out.append(UInt8(ascii: ">"))
            case "quot": out.append(UInt8(ascii: "\""))
            case "apos": out.append(UInt8(ascii: "'"))
            default:
                let scalar: UInt32?
                if entity.hasPrefix("#x") { scalar = UInt32(entity.dropFirst(2), radix: 16) }
                else if entity.hasPrefix("#") { scalar = UInt32(entity.dropFirst(), radix: 10) }
                else { scalar = nil }
                guard let scalar, scalar != 0, let character = Unicode.Scalar(scalar) else { return nil }
                out.append(contentsOf: Array(String(Character(character)).utf8))
            }
            index = semicolon + 1
        }
        return String(validating: out, as: UTF8.self)
    }
}
