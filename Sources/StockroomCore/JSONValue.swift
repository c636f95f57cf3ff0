import Foundation

/// Any JSON value: what a client hands back to a checkpoint. Strings, booleans, nulls and nesting are
/// kept as sent; a number is kept as a `Double` (as JavaScript reads it: an integer beyond 2^53
/// comes back rounded), and an object's members are written sorted by name.
public indirect enum JSONValue: Hashable, Sendable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])
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
