/// A D-Bus value as read from a message: what bluetoothd sends about its
/// adapters and the devices it hears. The reader (HandoffBlueZ) builds these
/// with a depth and count budget; everything here is pure, so the decisions
/// taken on them are tested without a bus.
public indirect enum BusValue: Sendable, Equatable {
    case bool(Bool)
    case byte(UInt8)
    case int16(Int16)
    case uint16(UInt16)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    /// s, o and g.
    case string(String)
    /// ay, read in one piece.
    case bytes([UInt8])
    case array([BusValue])
    /// One {key value} element of a dictionary (an array of entries).
    case entry(BusValue, BusValue)
    case structure([BusValue])
    case variant(BusValue)

    /// The value inside any number of variants.
    public var unwrapped: BusValue {
        if case let .variant(inner) = self { return inner.unwrapped }
        return self
    }

    public var string: String? {
        if case let .string(text) = unwrapped { return text }
        return nil
    }

    public var bool: Bool? {
        if case let .bool(flag) = unwrapped { return flag }
        return nil
    }

    /// An array's strings (GetCapabilities); empty for anything else.
    public var strings: [String] { if case let .array(values) = unwrapped { values.compactMap(\.string) } else { [] } }

    /// Any integer type, if it fits an Int.
    public var integer: Int? {
        switch unwrapped {
        case let .byte(value): Int(value)
        case let .int16(value): Int(value)
        case let .uint16(value): Int(value)
        case let .int32(value): Int(value)
        case let .uint32(value): Int(value)
        case let .int64(value): Int(value)
        case let .uint64(value): Int(exactly: value)
        default: nil
        }
    }

    public var bytes: [UInt8]? {
        switch unwrapped {
        case let .bytes(bytes): bytes
        case .array([]): []
        default: nil
        }
    }

    /// An a{s...} dictionary with string keys; nil for anything else. A repeated key keeps its last value.
    public var stringDictionary: [String: BusValue]? {
        guard case let .array(elements) = unwrapped else { return nil }
        var result: [String: BusValue] = [:]
        for element in elements {
            guard case let .entry(key, value) = element, let name = key.string else { return nil }
            result[name] = value
        }
        return result
    }

    /// The entries of any dictionary, keys and values as they are.
    public var entries: [(key: BusValue, value: BusValue)]? {
        guard case let .array(elements) = unwrapped else { return nil }
        var result: [(key: BusValue, value: BusValue)] = []
        for element in elements {
            guard case let .entry(key, value) = element else { return nil }
            result.append((key, value))
        }
        return result
    }
}
