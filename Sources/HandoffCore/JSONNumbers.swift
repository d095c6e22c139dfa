/// Where a JSON text holds a number no double can hold (`1e999`). JSON parsers
/// refuse the whole text then, without saying where; this names the key path.
public enum JSONNumbers {
    /// The key path (`root.a.b[2]`) of the first such number, or nil. Reads the text
    /// once, keeping only the path; it does not validate the JSON (the parser does).
    public static func firstNonFinite(in text: String, root: String) -> String? {
        enum Level { case object(key: String?), array(index: Int) }
        var stack: [Level] = []
        var lastString = ""
        let scalars = Array(text.unicodeScalars)
        var index = 0
        func path() -> String {
            root + stack.map {
                switch $0 {
                case let .object(key): "." + (key ?? "?")
                case let .array(position): "[\(position)]"
                }
            }.joined()
        }
        while index < scalars.count {
            let scalar = scalars[index]
            index += 1
            switch scalar {
            case "{": stack.append(.object(key: nil))
            case "[": stack.append(.array(index: 0))
            case "}", "]": _ = stack.popLast()
            case ",":
                switch stack.last {
                case let .array(position)?: stack[stack.count - 1] = .array(index: position + 1)
                case .object?: stack[stack.count - 1] = .object(key: nil)
                case nil: break
                }
            case ":":
                if case .object? = stack.last { stack[stack.count - 1] = .object(key: lastString) }
            case "\"":
                var string = String.UnicodeScalarView()
                while index < scalars.count, scalars[index] != "\"" {
                    if scalars[index] == "\\", index + 1 < scalars.count { index += 1 }
                    string.append(scalars[index])
                    index += 1
                }
                index += 1
                lastString = String(string)
            case "-", "0"..."9":
                var token = String(scalar)
                while index < scalars.count, "0123456789+-.eE".unicodeScalars.contains(scalars[index]) {
                    token.unicodeScalars.append(scalars[index])
                    index += 1
                }
                if let number = Double(token), !number.isFinite { return path() }
            default:
                break
            }
        }
        return nil
    }
}
