import HandoffCore

/// Writes an activity as pretty JSON straight from its payload
/// mapping (Docs/PROTOCOL.md, "Activity payload"): nothing is decoded into
/// Swift values first, `$data` is base64-encoded a chunk at a time from the
/// mapped bytes, and the text leaves in 1 MiB writes, so a 64 MiB userInfo never
/// becomes one giant String, array or JSONValue on the way out. The payload is
/// walked once to check it (bounds, UTF-8, depth, finite numbers) before anything is written.
public struct PayloadJSON {
    public static let flushBytes = 1 << 20
    /// A multiple of 3, so chunks of base64 join without padding in between.
    static let base64ChunkBytes = 3 * 256 * 1024
    /// Takes each full chunk of text (and the rest at the end); handoff-peer writes them to stdout.
    private let sink: (UnsafeRawBufferPointer) -> Void
    private var writer = JSONWriter(capacity: PayloadJSON.flushBytes + 64 * 1024)

    public init(sink: @escaping (UnsafeRawBufferPointer) -> Void) {
        self.sink = sink
    }

    /// The activity as `{expiresAtMillis?, sequence, supportsContinuationStreams?, targetContentIdentifier?, title, type, userInfo, webpageURL?}`, then a newline.
    public mutating func write(payload: UnsafeRawBufferPointer) throws(HandoffError) {
        let header = try Self.check(payload)
        var fields: [(String, (inout PayloadJSON) throws(HandoffError) -> Void)] = [
            ("sequence", { $0.writer.append(String(header.sequence)) }),
            ("title", { $0.writer.writeString(header.title) }),
            ("type", { $0.writer.writeString(header.type) }),
            ("userInfo", { (output) throws(HandoffError) in
                var cursor = PayloadCursor(payload, at: header.userInfoOffset)
                var values = 0
                try output.walk(&cursor, indent: 2, depth: 0, values: &values, emit: true)
            }),
        ]
        if let expires = header.expiresAtMillis { fields.append(("expiresAtMillis", { $0.writer.append(String(expires)) })) }
        if let id = header.targetContentIdentifier { fields.append(("targetContentIdentifier", { $0.writer.writeString(id) })) }
        if let url = header.webpageURL { fields.append(("webpageURL", { $0.writer.writeString(url) })) }
        if header.supportsContinuationStreams { fields.append(("supportsContinuationStreams", { $0.writer.append("true") })) }
        fields.sort { $0.0 < $1.0 }
        writer.append("{")
        for (index, (key, body)) in fields.enumerated() {
            writer.append(index == 0 ? "\n  " : ",\n  ")
            writer.writeString(key)
            writer.append(": ")
            try body(&self)
        }
        writer.append("\n}\n")
        flush()
    }

    /// The userInfo alone, continuation lines indented by `indent` spaces (the human form).
    public mutating func write(userInfoOf payload: UnsafeRawBufferPointer, indent: Int) throws(HandoffError) {
        let header = try Self.check(payload)
        var cursor = PayloadCursor(payload, at: header.userInfoOffset)
        var values = 0
        try walk(&cursor, indent: indent, depth: 0, values: &values, emit: true)
        writer.append("\n")
        flush()
    }

    public mutating func write(text: String) {
        writer.append(text)
        flushIfFull()
    }

    public mutating func flush() {
        writer.drain(sink)
    }

    private mutating func flushIfFull() {
        if writer.count >= Self.flushBytes { flush() }
    }

    private mutating func newline(_ indent: Int) {
        writer.append("\n")
        writer.append(String(repeating: " ", count: indent))
    }

    /// The fixed fields, and where userInfo starts; the whole payload walked once without output.
    /// The one payload check handoffd also runs (`Activity.scanPayload`): the same
    /// checks and errors as decoding it, without building the userInfo.
    public static func check(_ payload: UnsafeRawBufferPointer) throws(HandoffError) -> ActivityHeader {
        try Activity.scanPayload(payload)
    }

    /// One property-list value (the binary encoding of Docs/PROTOCOL.md), as JSON when `emit`.
    private mutating func walk(_ cursor: inout PayloadCursor, indent: Int, depth: Int, values: inout Int,
                               emit: Bool) throws(HandoffError) {
        guard depth < PropertyListValue.maximumDepth else { throw PayloadCursor.invalid("values nested too deep") }
        values += 1
        guard values <= PropertyListValue.maximumValues else { throw PayloadCursor.invalid("too many values") }
        switch try cursor.uint8() {
        case 0x01:
            let text = try cursor.utf8(Int(try cursor.uint32()), check: !emit)
            if emit { writer.writeString(utf8: text) }
        case 0x02:
            let number = Int64(bitPattern: try cursor.uint64())
            if emit { writer.append(String(number)) }
        case 0x03:
            let number = Double(bitPattern: try cursor.uint64())
            guard number.isFinite else { throw PayloadCursor.invalid("a non-finite double") }
            if emit { writer.writeDouble(number) }
        case 0x04: if emit { writer.append("false") }
        case 0x05: if emit { writer.append("true") }
        case 0x06:
            let data = try cursor.bytes(Int(try cursor.uint32()))
            guard emit else { break }
            writer.append("{")
            newline(indent + 2)
            writer.append("\"$data\": \"")
            var offset = 0
            while offset < data.count {
                let end = min(data.count, offset + Self.base64ChunkBytes)
                writer.appendBase64(UnsafeRawBufferPointer(rebasing: data[offset..<end]))
                offset = end
                flushIfFull()
            }
            writer.append("\"")
            newline(indent)
            writer.append("}")
        case 0x07:
            let seconds = Double(bitPattern: try cursor.uint64())
            guard seconds.isFinite else { throw PayloadCursor.invalid("a non-finite date") }
            if emit {
                writer.append("{")
                newline(indent + 2)
                writer.append("\"$date\": ")
                writer.write(PropertyListValue.date(seconds).json["$date"] ?? .null)
                newline(indent)
                writer.append("}")
            }
        case 0x08:
            let count = Int(try cursor.uint32())
            guard count <= cursor.remaining else { throw PayloadCursor.invalid("an array longer than the payload") }
            if emit { writer.append(count == 0 ? "[]" : "[") }
            for index in 0..<count {
                if emit {
                    if index > 0 { writer.append(",") }
                    newline(indent + 2)
                }
                try walk(&cursor, indent: indent + 2, depth: depth + 1, values: &values, emit: emit)
            }
            if emit && count > 0 {
                newline(indent)
                writer.append("]")
            }
        case 0x09:
            let count = Int(try cursor.uint32())
            guard count <= cursor.remaining / 3 else { throw PayloadCursor.invalid("a dictionary longer than the payload") }
            if emit { writer.append(count == 0 ? "{}" : "{") }
            for index in 0..<count {
                let keyLength = Int(try cursor.uint16())
                guard keyLength <= PropertyListValue.maximumKeyBytes else { throw PayloadCursor.invalid("a key too long") }
                let key = try cursor.utf8(keyLength, check: !emit)
                if emit {
                    if index > 0 { writer.append(",") }
                    newline(indent + 2)
                    writer.writeString(utf8: key)
                    writer.append(": ")
                }
                try walk(&cursor, indent: indent + 2, depth: depth + 1, values: &values, emit: emit)
            }
            if emit && count > 0 {
                newline(indent)
                writer.append("}")
            }
        case let tag:
            throw PayloadCursor.invalid("unknown value tag \(tag)")
        }
        if emit { flushIfFull() }
    }
}

/// Big-endian reads over the mapping that fail instead of overrunning it.
struct PayloadCursor {
    let payload: UnsafeRawBufferPointer
    private(set) var offset: Int

    init(_ payload: UnsafeRawBufferPointer, at offset: Int) {
        self.payload = payload
        self.offset = offset
    }

    var remaining: Int { payload.count - offset }

    static func invalid(_ what: String) -> HandoffError {
        .payloadInvalid("the payload handoffd passed holds \(what)")
    }

    mutating func bytes(_ count: Int) throws(HandoffError) -> UnsafeRawBufferPointer {
        guard count >= 0, count <= remaining else { throw Self.invalid("a value longer than the payload") }
        defer { offset += count }
        return UnsafeRawBufferPointer(rebasing: payload[offset..<offset + count])
    }

    /// A string's bytes; checked to be UTF-8 when `check` (the first walk), so the second writes them as they are.
    mutating func utf8(_ count: Int, check: Bool) throws(HandoffError) -> UnsafeRawBufferPointer {
        let text = try bytes(count)
        if check, String(validating: text, as: UTF8.self) == nil { throw Self.invalid("text that is not UTF-8") }
        return text
    }

    mutating func uint8() throws(HandoffError) -> UInt8 { try bytes(1)[0] }

    mutating func uint16() throws(HandoffError) -> UInt16 { UInt16(try big(2)) }

    mutating func uint32() throws(HandoffError) -> UInt32 { UInt32(try big(4)) }

    mutating func uint64() throws(HandoffError) -> UInt64 { try big(8) }

    private mutating func big(_ width: Int) throws(HandoffError) -> UInt64 {
        try bytes(width).reduce(0) { $0 << 8 | UInt64($1) }
    }
}

