import Foundation

/// Any JSON value, kept as sent: what a client hands back to a checkpoint.
public indirect enum JSONValue: Hashable, Sendable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])
}

extension JSONValue: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let bool = try? container.decode(Bool.self) {
            self = .bool(bool)
        } else if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else if let string = try? container.decode(String.self) {
            self = .string(string)
        } else if let array = try? container.decode([JSONValue].self) {
            self = .array(array)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}

extension JSONValue {
    /// `validationFailed` on `field` when the value, as compact JSON, is larger than `Checkpoint.maxValueBytes`.
    public func checkSize(field: String) throws(DomainError) {
        guard compactByteCount(limit: Checkpoint.maxValueBytes) <= Checkpoint.maxValueBytes else {
            throw .validationFailed(field: field, message: "a checkpoint value must be at most \(Checkpoint.maxValueBytes) bytes of JSON")
        }
    }

    /// The length of the value's compact JSON, at least; counting stops once past `limit`.
    /// Strings count their UTF-8 bytes and quotes (escapes would only add), numbers their shortest form.
    func compactByteCount(limit: Int) -> Int {
        switch self {
        case .null: return 4
        case .bool(let value): return value ? 4 : 5
        case .number(let value): return "\(value)".utf8.count
        case .string(let value): return value.utf8.count + 2
        case .array(let values):
            var count = 2 + max(values.count - 1, 0)
            for value in values where count <= limit { count += value.compactByteCount(limit: limit - count) }
            return count
        case .object(let members):
            var count = 2 + max(members.count - 1, 0)
            for (key, value) in members where count <= limit {
                count += key.utf8.count + 3 + value.compactByteCount(limit: limit - count)
            }
            return count
        }
    }
}
