import Foundation
import StockroomCore

/// Where a page of `GET /v1/items` continues: a creation-order position; opaque and URL-safe on
/// the wire (base64url of `i:<seq>`), where it is always written encoded.
public struct PageCursor: Hashable, Sendable, WireCursor {
    /// The creation-order position (the item's seq) of the last item before the position.
    public var seq: Int64

    /// Creates a cursor.
    public init(seq: Int64) {
        self.seq = seq
    }

    /// The cursor as written on the wire.
    public var encoded: String {
        Data("i:\(seq)".utf8).base64URLEncodedString()
    }

    /// Parses an encoded cursor; nil when malformed.
    public init?(encoded: String) {
        guard let data = Data(base64URLEncoded: encoded), let text = String(data: data, encoding: .utf8), text.hasPrefix("i:"),
            let seq = Int64(text.dropFirst(2)), seq >= 0
        else { return nil }
        self.init(seq: seq)
    }
}
