import StockroomCore


/// The contract's `Change` object, `{"seq","cursor","entity","op","id","value","origin":{"clientID",
/// "idempotencyKey"},"at"}`, with `"move"` after `op` when a filtered feed sends an item crossing
/// its filter: the one writer of it, for an entry the hub holds (`String`s) and for a
/// row of the log read in place (bytes). `value` is the entity's JSON as the log stores it
/// (ARCHITECTURE.md, "The change log's stored form"), spliced in without decoding it.
public enum ChangeJSON {
    @inlinable
    public static func write<Text: JSONText, Epoch: Sequence<UInt8>, Value: Sequence<UInt8>>(
        seq: Int64, epoch: Epoch, entity: Text, op: Text, id: Text, value: Value?,
        originClientID: Text?, originIdempotencyKey: Text?, at: Int64, move: ChangeMove? = nil, to json: inout JSONWriter
    ) {
        json.raw(#"{"seq":"#)
        json.int(seq)
        json.raw(#","cursor":"#)
        FeedCursor.write(epoch: epoch, seq: seq, to: &json)
        json.raw(#","entity":"#)
        entity.writeQuoted(to: &json)
        json.raw(#","op":"#)
        op.writeQuoted(to: &json)
        switch move {
        case .in?: json.raw(#","move":"in""#)
        case .out?: json.raw(#","move":"out""#)
        case nil: break
        }
        json.raw(#","id":"#)
        id.writeQuoted(to: &json)
        json.raw(#","value":"#)
        if let value { json.raw(json: value) } else { json.raw("null") }
        json.raw(#","origin":{"clientID":"#)
        json.text(originClientID)
        json.raw(#","idempotencyKey":"#)
        json.text(originIdempotencyKey)
        json.raw(#"},"at":"#)
        json.timestamp(milliseconds: at)
        json.raw("}")
    }
}
