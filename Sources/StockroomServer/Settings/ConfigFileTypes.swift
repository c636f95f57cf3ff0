import Foundation
import StockroomCore
import StockroomWire  // needed: JSONValue's Decodable conformance

/// The JSON type of each value of a config file, by its setting's key (`{"http": {"port": 8080}}`:
/// `http.port`, a number).
///
/// swift-configuration's JSON provider reads a value through `JSONSerialization`, which hands a
/// `true` over as the number 1 and a `1` as `true`; so `"port": true` would listen on port 1 and
/// `"demo": 1` would seed the demo items. `SettingReader` refuses a number where true or false is
/// expected, and a boolean (or a list, or an object) where a number or a string is, by the types
/// read here, with a strict decoder.
public struct ConfigFileTypes: Sendable {
    /// A value's JSON type.
    public enum Kind: Sendable, Equatable {
        case bool, number, string, array, object, null
    }

    /// The file, as its errors name it.
    public let file: String
    /// Each value's type and its text as written (`true`, `8080`), by key.
    let values: [String: (kind: Kind, text: String)]

    /// The types of the values of the JSON object in `data`; nil when it is not one (the
    /// provider's own reading says what is wrong then).
    public init?(json data: Data, file: String) {
        // `JSONValue`'s decoding tells booleans from numbers: `JSONDecoder` reads `1` as no `Bool`
        // and `true` as no `Double`.
        guard case .object(let members)? = try? JSONDecoder().decode(JSONValue.self, from: data) else { return nil }
        self.file = file
        var values: [String: (kind: Kind, text: String)] = [:]
        func add(_ node: JSONValue, at key: String) {
            switch node {
            case .object(let members):
                values[key] = (.object, "an object")
                for (name, member) in members { add(member, at: key + "." + name) }
            case .array: values[key] = (.array, "a list")
            case .bool(let flag): values[key] = (.bool, "\(flag)")
            case .number(let number): values[key] = (.number, number == number.rounded() && abs(number) < 1e15 ? "\(Int(number))" : "\(number)")
            case .string(let text): values[key] = (.string, "\"\(text)\"")
            case .null: values[key] = (.null, "null")
            }
        }
        for (name, member) in members { add(member, at: name) }
        self.values = values
    }

    /// The JSON type and text of the value at `key`, nil when the file has none.
    func value(_ key: String) -> (kind: Kind, text: String)? { values[key] }

    /// Every key of the file, the objects' keys among them (`http` and `http.port`).
    var keys: Dictionary<String, (kind: Kind, text: String)>.Keys { values.keys }
}
