import Foundation
import HandoffAPI
import HandoffCore
import Testing

@Suite struct JSONWriterTests {
    @Test func writesCompactSortedJSONThatParsesBack() throws {
        let value: JSONValue = ["b": [1, .double(2.5), true, nil], "a": "quote \" slash \\ newline \n tab \t bell \u{07} é 😀", "c": ["z": .double(0.1), "y": -3]]
        let text = String(decoding: JSONWriter.line(value), as: UTF8.self)
        #expect(text == #"{"a":"quote \" slash \\ newline \n tab \t bell \u0007 é 😀","b":[1,2.5,true,null],"c":{"y":-3,"z":0.1}}"# + "\n")
        #expect(try JSONValue.parse(text) == value)
    }

    @Test func integralDoublesPrintWithoutAFraction() {
        var writer = JSONWriter()
        writer.writeDouble(2.0)
        writer.append(",")
        writer.writeDouble(1e300)
        #expect(String(decoding: writer.bytes, as: UTF8.self) == "2,1e+300")
    }

    @Test(arguments: [0, 1, 2, 3, 4, 5, 255, 256, 257, 4096])
    func base64MatchesFoundation(_ count: Int) {
        let bytes = (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
        var writer = JSONWriter()
        bytes.withUnsafeBytes { writer.appendBase64($0) }
        #expect(String(decoding: writer.bytes, as: UTF8.self) == Data(bytes).base64EncodedString())
    }
}
