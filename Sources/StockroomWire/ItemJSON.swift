import StockroomCore

/// The contract's `Item` object, `{"id","name","color","status","version","createdAt","updatedAt"}`:
/// the one writer of it, for an `Item` value (`Item.write(to:)`) and for a row read in place (the
/// snapshot), and of the editable fields a `Draft` shares with it.
public enum ItemJSON {
    @inlinable
    public static func write<ID: JSONText, Name: JSONText, ColorName: JSONText>(
        id: ID, name: Name, color: ColorJSON<ColorName>?, status: Status, version: Int64,
        createdAt: Int64, updatedAt: Int64, to json: inout JSONWriter
    ) {
        json.raw(#"{"id":"#)
        id.writeQuoted(to: &json)
        json.raw(",")
        writeEditableFields(name: name, color: color, status: status, to: &json)
        json.raw(#","version":"#)
        json.int(version)
        json.raw(#","createdAt":"#)
        json.timestamp(milliseconds: createdAt)
        json.raw(#","updatedAt":"#)
        json.timestamp(milliseconds: updatedAt)
        json.raw("}")
    }

    /// `"name":…,"color":…,"status":…`: what an `Item` and a `Draft` both write.
    @inlinable
    public static func writeEditableFields<Name: JSONText, ColorName: JSONText>(
        name: Name, color: ColorJSON<ColorName>?, status: Status, to json: inout JSONWriter
    ) {
        json.raw(#""name":"#)
        name.writeQuoted(to: &json)
        json.raw(#","color":"#)
        if let color { color.write(to: &json) } else { json.raw("null") }
        json.raw(#","status":"#)
        status.write(to: &json)
    }
}
