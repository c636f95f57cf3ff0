import HummingbirdCore
@testable import StockroomServer
import Testing

@Suite("Query parameters, form-decoded")
struct QueryFormTests {
    @Test(arguments: [
        ("/v1/items?q=a+b", "q", "a b"),
        ("/v1/items?q=a%2Bb", "q", "a+b"),
        ("/v1/items?q=a%20b%26c", "q", "a b&c"),
        ("/v1/items?q=%E2%82%AC+5", "q", "€ 5"),
        ("/v1/items?limit=5&q=x&qq=y", "q", "x"),
        ("/v1/items?q", "q", ""),
        ("/v1/items?q=", "q", ""),
        ("/v1/items?&&q=x&&", "q", "x"),
        ("/v1/items?q=a=b", "q", "a=b"),
        ("/v1/items?my+name=1", "my name", "1"),
        ("/v1/items?%71=x", "q", "x"),
        // Escapes that do not decode are kept as sent, `+` still a space.
        ("/v1/items?q=100%+off", "q", "100% off"),
        ("/v1/items?q=%FF", "q", "%FF"),
        ("/v1/items?filter=name+%3D+%22%FF%22", "filter", "name %3D %22%FF%22"),
        ("/v1/items?q=%C3%28", "q", "%C3%28"),
        ("/v1/items?q=%4", "q", "%4"),
        ("/v1/items?q=%zz+1", "q", "%zz 1"),
        ("/v1/items?q=%c3%a9", "q", "é"),
    ])
    func valueOf(uri: String, name: String, expected: String) throws {
        #expect(try URI(uri).formValue(name) == expected)
    }

    @Test(arguments: ["/v1/items", "/v1/items?", "/v1/items?qq=1", "/v1/items?Q=1", "/v1/items?limit=q"])
    func absent(uri: String) throws {
        #expect(try URI(uri).formValue("q") == nil)
        #expect((try? URI(uri).decodedFormValue("q")) == .some(nil))
    }

    /// The strict reading, for a value that is a grammar of its own: the same value where the
    /// escapes decode, an error where `formValue` keeps the text as sent.
    @Test(arguments: [
        ("/v1/items?q=a+b%2Bc", "a b+c"), ("/v1/items?q=%c3%a9", "é"), ("/v1/items?q", ""), ("/v1/items?q=100%25+off", "100% off"),
        ("/v1/items?q=100%+off", nil), ("/v1/items?q=%FF", nil), ("/v1/items?q=%C3%28", nil), ("/v1/items?q=%4", nil), ("/v1/items?q=%zz", nil),
    ])
    func strictValueOf(uri: String, expected: String?) throws {
        if let expected {
            #expect(try URI(uri).decodedFormValue("q") == expected)
        } else {
            #expect(throws: URI.QueryValueError.undecodable) { try URI(uri).decodedFormValue("q") }
        }
    }

    /// A parameter given twice, under any spelling of its name, has no one value: both readings say so.
    @Test(arguments: [
        "/v1/items?q=x&q=y", "/v1/items?q=x&q=x", "/v1/items?q&q=1", "/v1/items?q=1&limit=2&%71=3", "/v1/items?q=a&q+=b&q=c",
    ])
    func repeated(uri: String) {
        #expect(throws: URI.QueryValueError.repeated) { try URI(uri).formValue("q") }
        #expect(throws: URI.QueryValueError.repeated) { try URI(uri).decodedFormValue("q") }
    }
}
