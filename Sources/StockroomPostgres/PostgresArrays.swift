import NIOCore
import PostgresNIO

/// A `text[]` parameter whose elements may be NULL (postgres-nio's arrays hold no optionals), in
/// PostgreSQL's binary array format: dimensions, a has-nulls flag, the element type, then each
/// element's length (-1 for NULL) and bytes.
struct NullableTextArray: PostgresNonThrowingEncodable {
    var elements: [String?]

    init(_ elements: [String?]) {
        self.elements = elements
    }

    static var psqlType: PostgresDataType { .textArray }
    static var psqlFormat: PostgresFormat { .binary }

    func encode<JSONEncoder: PostgresJSONEncoder>(into buffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>) {
        buffer.writeInteger(elements.isEmpty ? 0 : 1, as: Int32.self)
        buffer.writeInteger(elements.contains(nil) ? 1 : 0, as: Int32.self)
        buffer.writeInteger(PostgresDataType.text.rawValue)
        guard !elements.isEmpty else { return }
        buffer.writeInteger(Int32(elements.count))
        buffer.writeInteger(1, as: Int32.self)
        for element in elements {
            guard let element else {
                buffer.writeInteger(-1, as: Int32.self)
                continue
            }
            buffer.writeInteger(Int32(element.utf8.count))
            buffer.writeString(element)
        }
    }
}
