import Foundation
import Testing
@testable import StockroomCore
@testable import StockroomWire

/// A parsed JSON value, so that documents compare regardless of key order and number spelling.
indirect enum JSON: Equatable, CustomStringConvertible {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSON])
    case object([String: JSON])

    init(_ any: Any) {
        switch any {
        case is NSNull:
            self = .null
        case let string as String:
            self = .string(string)
        case let number as NSNumber:
            // JSONSerialization parses true/false as boolean NSNumbers (objCType "c").
            if String(cString: number.objCType) == "c" {
                self = .bool(number.boolValue)
            } else {
                self = .number(number.doubleValue)
            }
        case let array as [Any]:
            self = .array(array.map(JSON.init))
        case let object as [String: Any]:
            self = .object(object.mapValues(JSON.init))
        default:
            fatalError("not a JSON value: \(type(of: any))")
        }
    }

    static func parse(_ data: Data) throws -> JSON {
        JSON(try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]))
    }

    static func parse(_ text: String) throws -> JSON {
        try parse(Data(text.utf8))
    }

    subscript(key: String) -> JSON? {
        if case .object(let object) = self { object[key] } else { nil }
    }

    var description: String {
        switch self {
        case .null: "null"
        case .bool(let b): "\(b)"
        case .number(let n): n == n.rounded() && abs(n) < 1e15 ? "\(Int64(n))" : "\(n)"
        case .string(let s): "\"\(s)\""
        case .array(let a): "[" + a.map(\.description).joined(separator: ",") + "]"
        case .object(let o):
            "{" + o.keys.sorted().map { "\"\($0)\":\(o[$0]!.description)" }.joined(separator: ",") + "}"
        }
    }
}

func encodedJSON<T: Encodable>(_ value: T) throws -> JSON {
    try JSON.parse(JSONCoding.encoder().encode(value))
}

func decode<T: Decodable>(_ type: T.Type, _ text: String) throws -> T {
    try JSONCoding.decoder().decode(type, from: Data(text.utf8))
}

/// Encodes `value` and compares the parsed document with `text`; decodes `text` and checks that
/// it writes the same document again. For values holding times: a decoded `Date` need not be
/// bit-identical to `Timestamp.date(milliseconds:)`, only the same on the wire.
func expectWireShape<T: Codable>(
    _ value: T, _ text: String, sourceLocation: SourceLocation = #_sourceLocation
) throws {
    #expect(try encodedJSON(value) == JSON.parse(text), sourceLocation: sourceLocation)
    #expect(try encodedJSON(decode(T.self, text)) == JSON.parse(text), sourceLocation: sourceLocation)
}

/// Encodes `value`, compares the parsed document with `text`, and decodes `text` back to `value`.
func expectShape<T: Codable & Equatable>(
    _ value: T, _ text: String, sourceLocation: SourceLocation = #_sourceLocation
) throws {
    #expect(try encodedJSON(value) == JSON.parse(text), sourceLocation: sourceLocation)
    #expect(try decode(T.self, text) == value, sourceLocation: sourceLocation)
}

let kb = "6f1c2e4a-1111-4000-8000-000000000001"
let kbUpper = "6F1C2E4A-1111-4000-8000-000000000001"
let keyboardDraftJSON = #"{"name": "Keyboard", "color": null, "status": {"inStock": {"quantity": 3}}}"#
