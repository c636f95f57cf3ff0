import Foundation
@testable import StockroomWire
import Testing

@Suite struct JSONDuplicateKeyTests {
    @Test("the first name given twice in one object, and where", arguments: [
        (#"{"a":1,"a":2}"#, "a", "a"),
        (#"{"a":1,"b":{"c":[],"c":null}}"#, "b.c", "c"),
        (#"{"items":[{"x":1},{"x":1,"y":2,"x":3}],"z":{"z":1,"z":2}}"#, "items[1].x", "x"),
        (#"{"a":1,"\u0061":2}"#, "a", "a"),
        (#"{"é":1,"\u00e9":2}"#, "é", "é"),
        (#"[{"k":1},[{"k":1,"k":1}]]"#, "[1][0].k", "k"),
        (#" { "a" : 1 , "a" : 1 } "#, "a", "a"),
        (#"{"a":"}","b":{"c":"]","d":[1,{"e":",","e":2}]}}"#, "b.d[1].e", "e"),
        (#"{"x":[[1,2],[3,{"y":{"z":1},"y":0}]]}"#, "x[1][1].y", "y"),
        (#"{"\"":1,"\u0022":2}"#, "\"", "\""),
    ])
    func finds(_ text: String, field: String, name: String) throws {
        _ = try JSONSerialization.jsonObject(with: Data(text.utf8), options: .fragmentsAllowed)
        #expect(JSONDuplicateKey.find(in: Array(text.utf8)) == JSONDuplicateKey.Finding(field: field, name: name))
    }

    @Test("none: names unique per object", arguments: [
        #"{"a":1,"b":{"a":1},"c":[{"a":1},{"a":1}]}"#, #"[1,2,1]"#, #""a""#, "1", "{}", "[]",
        #"{"a":1,"A":2}"#, #"{"a":1,"a ":2}"#, #"{"a":"a","b":["a","a"],"c":"b"}"#, #"{"a\"":1,"a":2}"#,
        #"{"a":{"b":1},"b":{"a":1}}"#,
    ])
    func none(_ text: String) throws {
        _ = try JSONSerialization.jsonObject(with: Data(text.utf8), options: .fragmentsAllowed)
        #expect(JSONDuplicateKey.find(in: Array(text.utf8)) == nil)
    }
}

extension JSONDuplicateKeyTests {
    /// Past `linearLimit` names an object's are kept in a set: a repeat is found on either side of
    /// the switch, and many distinct names are not one.
    @Test("an object of many names")
    func manyNames() {
        for count in [JSONDuplicateKey.linearLimit - 1, JSONDuplicateKey.linearLimit, JSONDuplicateKey.linearLimit + 1, 5_000] {
            let names = (0..<count).map { #""k\#($0)":\#($0)"# }
            #expect(JSONDuplicateKey.find(in: Array(("{" + names.joined(separator: ",") + "}").utf8)) == nil, "\(count)")
            for repeated in [0, count - 1] {
                let text = "{" + names.joined(separator: ",") + #","k\#(repeated)":0}"#
                #expect(JSONDuplicateKey.find(in: Array(text.utf8)) == JSONDuplicateKey.Finding(field: "k\(repeated)", name: "k\(repeated)"), "\(count)")
            }
        }
    }
}
