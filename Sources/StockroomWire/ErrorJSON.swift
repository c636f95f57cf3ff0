import StockroomCore

/// The contract's error body, `{"error":{"code","message","field","current"?}}`: the one writer of
/// it, for plain HTTP answers, the SSE `error` event, WebSocket close reasons, the answers given
/// before a request reaches the router, and (the inner object) each refused item of a batch.
public enum ErrorJSON {
    /// The object under the body's `error` key, `{"code","message","field","current"?}`.
    public static func writeObject(code: ErrorCode, message: String, field: String?, current: Item?, to json: inout JSONWriter) {
        json.raw(#"{"code":"#)
        json.string(code.rawValue)
        json.raw(#","message":"#)
        json.string(message)
        json.raw(#","field":"#)
        json.text(field)
        if let current {
            json.raw(#","current":"#)
            current.write(to: &json)
        }
        json.raw("}")
    }

    /// The whole body. With `maxBytes` (a WebSocket close reason allows 123) the message is
    /// shortened, marked with an ellipsis, until the body fits; `current` is left out then.
    public static func body(code: ErrorCode, message: String, field: String?, current: Item?, maxBytes: Int? = nil) -> String {
        var shortened = Substring(message)
        while true {
            var json = JSONWriter()
            json.raw(#"{"error":"#)
            writeObject(
                code: code, message: shortened.count < message.count ? shortened + "…" : message, field: field,
                current: maxBytes == nil ? current : nil, to: &json)
            json.raw("}")
            guard let maxBytes, json.bytes.count > maxBytes, !shortened.isEmpty else { return json.string }
            shortened = shortened.dropLast()
        }
    }
}
