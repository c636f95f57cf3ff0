import StockroomCore

/// Text the body writers quote: a `String`, UTF-8 bytes read in place (a database column, with no
/// `String` made), or an item id. The writers are generic over it so that a value and a stored row
/// go through the same code, specialized for each.
public protocol JSONText {
    /// Appends the text as a quoted, escaped JSON string.
    func writeQuoted(to json: inout JSONWriter)
}

extension String: JSONText {
    @inlinable
    public func writeQuoted(to json: inout JSONWriter) { json.string(self) }
}

extension UnsafeBufferPointer: JSONText where Element == UInt8 {
    @inlinable
    public func writeQuoted(to json: inout JSONWriter) { json.string(utf8: self) }
}

extension ItemID: JSONText {
    @inlinable
    public func writeQuoted(to json: inout JSONWriter) { json.itemID(self) }
}

extension JSONWriter {
    /// `text` quoted, or `null`.
    @inlinable
    public mutating func text(_ text: (some JSONText)?) {
        if let text { text.writeQuoted(to: &self) } else { raw("null") }
    }
}
