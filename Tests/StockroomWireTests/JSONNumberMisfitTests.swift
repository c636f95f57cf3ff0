import Foundation
import Testing
@testable import StockroomWire

/// `JSONNumberMisfit` finds the number a body's field cannot hold, by the decoder's own paths, and
/// says "not JSON" only of what is not JSON.
@Suite struct JSONNumberMisfitTests {
    typealias Finding = JSONNumberMisfit.Finding

    static func find(_ text: String) -> Finding { JSONNumberMisfit.find(in: Array(text.utf8)) }

    @Test(arguments: [
        (#"{"name":"A","status":{"inStock":{"quantity":1.5}}}"#, Finding.misfit(field: "status.inStock.quantity", number: "1.5", wholeNumberExpected: true)),
        (#"{"status":{"inStock":{"quantity":9223372036854775808}}}"#, .misfit(field: "status.inStock.quantity", number: "9223372036854775808", wholeNumberExpected: true)),
        (#"{"status":{"inStock":{"quantity":-9223372036854775809}}}"#, .misfit(field: "status.inStock.quantity", number: "-9223372036854775809", wholeNumberExpected: true)),
        (#"{"status":{"inStock":{"quantity":1e19}}}"#, .misfit(field: "status.inStock.quantity", number: "1e19", wholeNumberExpected: true)),
        (#"{"color":{"name":"c","red":1e400,"green":0,"blue":0}}"#, .misfit(field: "color.red", number: "1e400", wholeNumberExpected: false)),
        (#"{"color":{"name":"c","red":0,"green":-1E-400,"blue":0}}"#, .misfit(field: "color.green", number: "-1E-400", wholeNumberExpected: false)),
        (#"{"operations":[{"op":"create"},{"op":"update","version":2.5}]}"#, .misfit(field: "operations[1].version", number: "2.5", wholeNumberExpected: true)),
        (#"{"command":{"updateDraft":{"draft":{"status":{"inStock":{"quantity":0.5}}}}}}"#, .misfit(field: "command.updateDraft.draft.status.inStock.quantity", number: "0.5", wholeNumberExpected: true)),
        (#"{"checkpoints":{"list":{"depth":1.25}}}"#, .misfit(field: "checkpoints.list.depth", number: "1.25", wholeNumberExpected: true)),
        // A key written with escapes is the key it spells.
        (#"{"status":{"inStock":{"quan\u0074ity":3.5}}}"#, .misfit(field: "status.inStock.quantity", number: "3.5", wholeNumberExpected: true)),
        // The first misfit in document order.
        (#"{"a":{"quantity":1.5},"b":{"quantity":2.5}}"#, .misfit(field: "a.quantity", number: "1.5", wholeNumberExpected: true)),
        ("1e999", .misfit(field: "", number: "1e999", wholeNumberExpected: false)),
    ])
    func aNumberItsFieldCannotHoldIsFoundByItsPath(text: String, expected: Finding) {
        #expect(Self.find(text) == expected)
    }

    @Test(arguments: [
        #"{"status":{"inStock":{"quantity":3}}}"#,
        #"{"status":{"inStock":{"quantity":100.0}}}"#,  // the decoder reads a whole number written so as an Int
        #"{"status":{"inStock":{"quantity":1e2}}}"#,
        #"{"status":{"inStock":{"quantity":-0}}}"#,
        #"{"color":{"red":0.5,"green":1e-300,"blue":0e-999}}"#,
        #"{"name":"1.5","values":[1.5,2.5,-3e10],"ok":true,"no":false,"none":null}"#,
        #"  {"s":"\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00"}  "#,
        "[]",
        "{}",
    ])
    func aBodyWhoseNumbersFitHasNoMisfit(text: String) {
        #expect(Self.find(text) == .noMisfit)
    }

    @Test(arguments: [
        "not json",
        "",
        "{",
        #"{"a":1,}"#,
        #"{"a":01}"#,
        #"{"a":1.}"#,
        #"{"a":.5}"#,
        #"{"a":+1}"#,
        #"{"a":1e}"#,
        #"{"a":NaN}"#,
        "{\"a\":\"tab\tinside\"}",
        #"{"a":"\x"}"#,
        #"{"a":"\ud800"}"#,
        #"{"a":"\udc00\ud800"}"#,
        #"{"a":1} {"b":2}"#,
        #"{'a':1}"#,
        "[1,2",
        "tru",
    ])
    func whatIsNotJSONIsSaidToBeNotJSON(text: String) {
        #expect(Self.find(text) == .notJSON)
    }

    @Test func invalidUTF8AndNestingPastTheLimitAreNotJSON() {
        #expect(JSONNumberMisfit.find(in: [UInt8(ascii: "\""), 0xFF, UInt8(ascii: "\"")]) == .notJSON)
        let deep = String(repeating: "[", count: JSONNumberMisfit.maxDepth + 1) + String(repeating: "]", count: JSONNumberMisfit.maxDepth + 1)
        #expect(Self.find(deep) == .notJSON)
        let allowed = String(repeating: "[", count: JSONNumberMisfit.maxDepth) + "1.5" + String(repeating: "]", count: JSONNumberMisfit.maxDepth)
        #expect(Self.find(allowed) == .noMisfit)
    }
}
