import HTTPTypes
@testable import StockroomServer
import Testing

/// `HTTPFields.value(of:)` reads what the subscript reads, without joining one field's value.
@Suite("A header's value, read as the subscript reads it")
struct HTTPFieldsValueTests {
    @Test("none, one, several (joined), names in any case, Cookie joined by semicolons")
    func asTheSubscript() {
        var fields = HTTPFields()
        #expect(fields.value(of: .contentType) == nil)
        fields.append(HTTPField(name: HTTPField.Name("content-TYPE")!, value: "application/json"))
        fields.append(HTTPField(name: .accept, value: "*/*"))
        #expect(fields.value(of: .contentType) == "application/json")
        fields.append(HTTPField(name: .contentType, value: "text/plain"))
        #expect(fields.value(of: .contentType) == "application/json, text/plain")
        fields.append(HTTPField(name: .cookie, value: "a=1"))
        fields.append(HTTPField(name: .cookie, value: "b=2"))
        #expect(fields.value(of: .cookie) == "a=1; b=2")
        for name: HTTPField.Name in [.contentType, .accept, .cookie, .authorization, .origin] {
            #expect(fields.value(of: name) == fields[name])
        }
    }
}
