import StockroomWire
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
    ])
    func finds(_ text: String, field: String, name: String) {
        #expect(JSONDuplicateKey.find(in: Array(text.utf8)) == JSONDuplicateKey.Finding(field: field, name: name))
    }

    @Test("none: names unique per object, or not JSON (JSONDecoder's to answer)", arguments: [
        #"{"a":1,"b":{"a":1},"c":[{"a":1},{"a":1}]}"#, #"[1,2,1]"#, #""a""#, "1", "{}",
        #"{"a":1,"A":2}"#, #"{"a":1,"a ":2}"#,
        #"{"a":1,"a":2"#, #"{"a":1,"a":2} x"#, #"{"a":1,"a":02}"#, "",
    ])
    func none(_ text: String) {
        #expect(JSONDuplicateKey.find(in: Array(text.utf8)) == nil)
    }
}
