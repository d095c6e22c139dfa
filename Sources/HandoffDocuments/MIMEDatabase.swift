import Glibc

/// The parts of the freedesktop.org shared MIME-info database (Debian's
/// shared-mime-info: `/usr/share/mime/{globs2,magic,subclasses,aliases}`) that
/// say what a file is: its type by name (globs) and by content (magic), and
/// which types a type is a kind of. Pure: built from the files' bytes.
public struct MIMEDatabase: Sendable {
    struct Glob: Sendable {
        var weight: Int
        var type: String
        var pattern: String
        var caseSensitive: Bool
    }

    /// One line of a magic section: at `offset` (up to `range` positions on), `value`
    /// under `mask`; `children` must have one match too, when there are any.
    struct MagicRule: Sendable {
        var offset: Int
        var range: Int
        var value: [UInt8]
        var mask: [UInt8]?
        var children: [MagicRule]
    }

    struct MagicSection: Sendable {
        var priority: Int
        var type: String
        var rules: [MagicRule]
    }

    /// The whole of the files this reads is bounded (Debian's are 60-470 KB).
    public static let maximumFileBytes = 4 << 20
    /// Magic rules look at most this far into a file (Debian's furthest is about 65 KB).
    public static let sniffBytes = 1 << 17

    private(set) var globs: [Glob] = []
    private(set) var magic: [MagicSection] = []
    private(set) var parents: [String: [String]] = [:]
    private(set) var aliases: [String: String] = [:]

    public init() {}

    /// Adds one directory's files (each may be absent: nil); a later directory adds to,
    /// never replaces, what an earlier one said.
    public mutating func add(globs2: [UInt8]?, magic magicBytes: [UInt8]?, subclasses: [UInt8]?, aliases aliasBytes: [UInt8]?) {
        if let globs2 { globs += Self.parseGlobs(globs2) }
        if let magicBytes { magic += Self.parseMagic(magicBytes) }
        for line in Self.lines(subclasses ?? []) {
            let words = line.split(separator: " ").map(String.init)
            guard words.count == 2 else { continue }
            parents[words[0], default: []].append(words[1])
        }
        for line in Self.lines(aliasBytes ?? []) {
            let words = line.split(separator: " ").map(String.init)
            guard words.count == 2, aliases[words[0]] == nil else { continue }
            aliases[words[0]] = words[1]
        }
    }

    public func canonical(_ type: String) -> String { aliases[type] ?? type }

    /// Every type `type` is a kind of, nearest first; every text/* type is a kind of text/plain.
    public func ancestors(of type: String) -> [String] {
        var out: [String] = []
        var queue = [canonical(type)]
        while !queue.isEmpty, out.count < 64 {
            let next = queue.removeFirst()
            var direct = parents[next] ?? []
            if next.hasPrefix("text/"), next != "text/plain", direct.isEmpty { direct = ["text/plain"] }
            for parent in direct.map(canonical) where parent != type && !out.contains(parent) {
                out.append(parent)
                queue.append(parent)
            }
        }
        return out
    }

    public func isKind(_ type: String, of other: String) -> Bool {
        canonical(type) == canonical(other) || ancestors(of: type).contains(canonical(other))
    }

    /// The type a file's name says, as the specification picks it: the highest weight, then the
    /// longest pattern; nil when nothing matches or the best matches disagree.
    public func typeByName(_ name: String) -> String? {
        var best: (weight: Int, length: Int, types: Set<String>)?
        let lowered = String(decoding: name.utf8.map { (65...90).contains($0) ? $0 + 32 : $0 }, as: UTF8.self)
        for glob in globs where Self.matches(glob.pattern, glob.caseSensitive ? name : lowered, caseSensitive: glob.caseSensitive) {
            let length = glob.pattern.utf8.count
            if let current = best, (glob.weight, length) < (current.weight, current.length) { continue }
            if let current = best, glob.weight == current.weight, length == current.length {
                best?.types.insert(canonical(glob.type))
            } else {
                best = (glob.weight, length, [canonical(glob.type)])
            }
        }
        guard let best, best.types.count == 1 else { return nil }
        return best.types.first
    }

    /// Every type whose magic the bytes match, highest priority first.
    public func typesByContent(_ bytes: [UInt8]) -> [String] {
        let head = Array(bytes.prefix(Self.sniffBytes))
        return magic.filter { section in section.rules.contains { Self.matches($0, head) } }
            .sorted { $0.priority > $1.priority }
            .map { canonical($0.type) }
    }

    /// Whether the database has magic for `type` itself.
    public func hasMagic(for type: String) -> Bool {
        let type = canonical(type)
        return magic.contains { canonical($0.type) == type }
    }

    // MARK: - Parsing

    static func lines(_ bytes: [UInt8]) -> [String] {
        String(decoding: bytes.prefix(maximumFileBytes), as: UTF8.self).split(separator: "\n").map(String.init)
            .filter { !$0.hasPrefix("#") && !$0.isEmpty }
    }

    static func parseGlobs(_ bytes: [UInt8]) -> [Glob] {
        lines(bytes).compactMap { line in
            let fields = line.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
            guard fields.count >= 3, let weight = Int(fields[0]), !fields[2].isEmpty else { return nil }
            let flags = fields.count > 3 ? fields[3].split(separator: ",").map(String.init) : []
            let caseSensitive = flags.contains("cs")
            let pattern = caseSensitive ? fields[2] : String(decoding: fields[2].utf8.map { (65...90).contains($0) ? $0 + 32 : $0 }, as: UTF8.self)
            return Glob(weight: weight, type: fields[1], pattern: pattern, caseSensitive: caseSensitive)
        }
    }

    static func matches(_ pattern: String, _ name: String, caseSensitive: Bool) -> Bool {
        if pattern.hasPrefix("*."), !pattern.dropFirst().contains(where: { "*?[".contains($0) }) {
            return name.hasSuffix(pattern.dropFirst())
        }
        if !pattern.contains(where: { "*?[".contains($0) }) { return name == pattern }
        return fnmatch(pattern, name, 0) == 0
    }

    /// The binary `MIME-Magic\0\n` format: `[priority:type]` sections, then lines of
    /// `[indent]>offset=` u16 BE length, value, optional `&mask`, `~wordsize`, `+range`.
    /// A malformed section ends the parse at that point: what came before stays.
    static func parseMagic(_ bytes: [UInt8]) -> [MagicSection] {
        let header = Array("MIME-Magic\0\n".utf8)
        guard bytes.count <= maximumFileBytes, bytes.starts(with: header) else { return [] }
        var sections: [MagicSection] = []
        var index = header.count
        func number() -> Int? {
            var value = 0, digits = 0
            while index < bytes.count, (48...57).contains(bytes[index]), digits < 9 {
                value = value * 10 + Int(bytes[index] - 48)
                index += 1
                digits += 1
            }
            return digits > 0 ? value : nil
        }
        while index < bytes.count, bytes[index] == UInt8(ascii: "[") {
            index += 1
            guard let priority = number(), index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return sections }
            index += 1
            let start = index
            while index < bytes.count, bytes[index] != UInt8(ascii: "]") { index += 1 }
            guard index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "\n") else { return sections }
            let type = String(decoding: bytes[start..<index], as: UTF8.self)
            index += 2
            var flat: [(indent: Int, rule: MagicRule)] = []
            while index < bytes.count, bytes[index] != UInt8(ascii: "[") {
                let indent = number() ?? 0
                guard index < bytes.count, bytes[index] == UInt8(ascii: ">") else { return sections }
                index += 1
                guard let offset = number(), index + 2 < bytes.count, bytes[index] == UInt8(ascii: "=") else { return sections }
                let length = Int(bytes[index + 1]) << 8 | Int(bytes[index + 2])
                index += 3
                guard index + length <= bytes.count else { return sections }
                let value = Array(bytes[index..<(index + length)])
                index += length
                var mask: [UInt8]?
                var wordSize = 1
                var range = 1
                while index < bytes.count, bytes[index] != UInt8(ascii: "\n") {
                    let marker = bytes[index]
                    index += 1
                    switch marker {
                    case UInt8(ascii: "&"):
                        guard index + length <= bytes.count else { return sections }
                        mask = Array(bytes[index..<(index + length)])
                        index += length
                    case UInt8(ascii: "~"): wordSize = number() ?? 1
                    case UInt8(ascii: "+"): range = max(number() ?? 1, 1)
                    default: return sections
                    }
                }
                index += 1
                var rule = MagicRule(offset: offset, range: min(range, sniffBytes), value: value, mask: mask, children: [])
                // Words are stored big-endian; this host reads them little-endian.
                if wordSize == 2 || wordSize == 4, length % wordSize == 0 {
                    rule.value = swapWords(value, size: wordSize)
                    rule.mask = mask.map { swapWords($0, size: wordSize) }
                }
                flat.append((indent, rule))
            }
            sections.append(MagicSection(priority: priority, type: type, rules: nest(flat)))
        }
        return sections
    }

    static func swapWords(_ bytes: [UInt8], size: Int) -> [UInt8] {
        stride(from: 0, to: bytes.count, by: size).flatMap { bytes[$0..<($0 + size)].reversed() }
    }

    /// Lines at indent n + 1 belong to the line at indent n before them.
    static func nest(_ flat: [(indent: Int, rule: MagicRule)]) -> [MagicRule] {
        var index = 0
        func level(_ indent: Int) -> [MagicRule] {
            var rules: [MagicRule] = []
            while index < flat.count, flat[index].indent >= indent {
                guard flat[index].indent == indent else {
                    index += 1 // a line deeper than its parent allows: skipped
                    continue
                }
                var rule = flat[index].rule
                index += 1
                rule.children = level(indent + 1)
                rules.append(rule)
            }
            return rules
        }
        return level(0)
    }

    static func matches(_ rule: MagicRule, _ bytes: [UInt8]) -> Bool {
        let length = rule.value.count
        guard length > 0 else { return false }
        var start = rule.offset
        let last = rule.offset + rule.range - 1
        while start <= last, start + length <= bytes.count {
            var equal = true
            for position in 0..<length {
                let byte = bytes[start + position] & (rule.mask?[position] ?? 0xFF)
                if byte != rule.value[position] & (rule.mask?[position] ?? 0xFF) {
                    equal = false
                    break
                }
            }
            if equal, rule.children.isEmpty || rule.children.contains(where: { matches($0, bytes) }) { return true }
            start += 1
        }
        return false
    }
}
