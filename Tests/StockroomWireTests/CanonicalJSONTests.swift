import Foundation
import StockroomWire
import Testing

/// Request bodies compared as JSON (an idempotent request's fingerprint): the same value however
/// it is spelled has one form; a different value, another; anything that is not one JSON value, none.
@Suite("Canonical JSON")
struct CanonicalJSONTests {
    static func form(_ text: String) -> [UInt8]? { CanonicalJSON.form(of: Array(text.utf8)) }

    @Test(arguments: [
        (#"{"name":"Keyboard","status":{"inStock":{"quantity":3}},"color":null}"#,
         " {\n \"color\" : null, \"status\":{ \"inStock\": {\"quantity\": 3.0}},\t\"name\": \"Key\\u0062oard\" } "),
        (#"[1, 2.5, -0, 100]"#, #"[1.0,25e-1,0,1E2]"#),
        (#"{"a":"\/\"\\\n\u00e9\ud83d\ude00"}"#, "{\"a\":\"/\\\"\\\\\\u000A\u{e9}\u{1F600}\"}"),
        (#"{"a":{},"b":[]}"#, #"{"b":[ ],"a":{ }}"#),
        ("true", " true "),
    ])
    func spellingsOfOneValueHaveOneForm(_ pair: (String, String)) throws {
        let first = try #require(Self.form(pair.0))
        #expect(Self.form(pair.1) == first)
    }

    @Test(arguments: [
        (#"{"quantity":3}"#, #"{"quantity":4}"#),
        (#"{"quantity":3}"#, #"{"quantity":"3"}"#),
        (#"[1,2]"#, #"[2,1]"#),
        (#"{"a":1,"b":2}"#, #"{"a":1,"b":2,"c":null}"#),
        (#"{"a":1,"a":2}"#, #"{"a":2,"a":1}"#),
        (#"["ab"]"#, #"["a","b"]"#),
        (#"{"ab":"c"}"#, #"{"a":"bc"}"#),
        ("true", "1"),
        ("null", "false"),
        (#"{}"#, #"[]"#),
    ])
    func differentValuesHaveDifferentForms(_ pair: (String, String)) throws {
        let first = try #require(Self.form(pair.0))
        let second = try #require(Self.form(pair.1))
        #expect(first != second)
    }

    @Test(arguments: [
        "", "  ", "{", #"{"a":1,}"#, "[1,]", #"{"a" 1}"#, "01", "-", "1.", ".5", "1e", "+1", "tru", "truex", "nul",
        #""a"#, "\"a\u{01}\"", #""\x""#, #""\u12""#, #""\ud800""#, #""\udc00x""#, "[1] [2]", "1e999", "NaN",
    ])
    func whatIsNotOneJSONValueHasNoForm(_ text: String) {
        #expect(Self.form(text) == nil)
    }

    @Test func bytesThatAreNotUTF8InAStringHaveNoForm() {
        #expect(CanonicalJSON.form(of: [UInt8(ascii: "\""), 0xFF, UInt8(ascii: "\"")]) == nil)
    }

    @Test func nestingDeeperThanTheLimitHasNoForm() {
        let depth = CanonicalJSON.maximumDepth
        #expect(Self.form(String(repeating: "[", count: depth) + String(repeating: "]", count: depth)) != nil)
        #expect(Self.form(String(repeating: "[", count: depth + 1) + String(repeating: "]", count: depth + 1)) == nil)
    }
}
