/// A position in the change feed of one database epoch; opaque and URL-safe on the wire
/// (`c1.<epoch>.<seq>`), where it is always written encoded.
public struct FeedCursor: Hashable, Sendable, WireCursor {
    /// The database epoch the position belongs to.
    public var epoch: String
    /// The seq of the last change before the position.
    public var seq: Int64

    /// Creates a cursor.
    public init(epoch: String, seq: Int64) {
        self.epoch = epoch
        self.seq = seq
    }

    /// `c1.<epoch>.<seq>`.
    public var encoded: String {
        var json = JSONWriter(capacity: epoch.utf8.count + 24)
        Self.writeUnquoted(epoch: epoch.utf8, seq: seq, to: &json)
        return json.string
    }

    /// The cursor of `epoch` (hex digits: nothing to escape) and `seq` as a JSON string: the one
    /// writer of the format, for every body and event that carries a cursor.
    @inlinable
    public static func write(epoch: some Sequence<UInt8>, seq: Int64, to json: inout JSONWriter) {
        json.raw(#"""#)
        writeUnquoted(epoch: epoch, seq: seq, to: &json)
        json.raw(#"""#)
    }

    /// `c1.<epoch>.<seq>`, the format itself (`encoded` and `write` both write it).
    @inlinable
    public static func writeUnquoted(epoch: some Sequence<UInt8>, seq: Int64, to json: inout JSONWriter) {
        json.raw("c1.")
        json.raw(json: epoch)
        json.raw(".")
        json.int(seq)
    }

    /// Parses an encoded cursor; nil when malformed: anything but `c1.`, ASCII hex digits, `.` and
    /// ASCII decimal digits (no sign; `Character.isHexDigit` would also take fullwidth digits).
    public init?(encoded: String) {
        let parts = encoded.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "c1", !parts[1].isEmpty, parts[1].utf8.allSatisfy(\.isASCIIHexDigit),
            !parts[2].isEmpty, parts[2].utf8.allSatisfy({ $0 &- UInt8(ascii: "0") < 10 }), let seq = Int64(parts[2])
        else { return nil }
        self.init(epoch: String(parts[1]), seq: seq)
    }
}
