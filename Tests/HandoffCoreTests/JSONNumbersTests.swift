import HandoffCore
import Testing

/// `publish --user-info '{"a": 1e999}'` names the key whose number no double holds.
@Suite struct JSONNumbersTests {
    @Test(arguments: [
        (#"{"a": 1e999}"#, "userInfo.a"),
        (#"{"page": 3, "nested": {"list": [1, 2.5, -1E+400]}}"#, "userInfo.nested.list[2]"),
        (#"[0, {"x": "1e999", "y": 1e999}]"#, "userInfo[1].y"),
        (#"{"we\"ird": 9e9999}"#, "userInfo.we\"ird"),
    ])
    func namesTheKeyPath(_ text: String, _ path: String) {
        #expect(JSONNumbers.firstNonFinite(in: text, root: "userInfo") == path)
    }

    @Test(arguments: [#"{"a": 1e308, "b": -1.7976931348623157e308}"#, #"{"a": "1e999"}"#, "[]", "{", ""])
    func finiteOrNoNumbersPass(_ text: String) {
        #expect(JSONNumbers.firstNonFinite(in: text, root: "userInfo") == nil)
    }
}
