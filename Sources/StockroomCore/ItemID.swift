import Foundation

/// The identifier of an item: a UUID written in lowercase, accepted in any case.
public struct ItemID: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The underlying UUID.
    public let uuid: UUID

    /// Wraps a UUID.
    public init(_ uuid: UUID) { self.uuid = uuid }

    /// Parses a UUID string (`8-4-4-4-12` hex digits) in any case; nil when it is not a UUID.
    public init?(_ string: String) {
        var string = string
        guard let id = string.withUTF8({ ItemID(utf8: UnsafeRawBufferPointer($0)) }) else { return nil }
        self = id
    }

    /// Parses a UUID from its text's UTF-8 bytes, as `init?(_:)` parses the text.
    public init?(utf8: UnsafeRawBufferPointer) {
        // By hand: Foundation's `UUID(uuidString:)` runs `sscanf`, which is costly here (every
        // stored id is parsed once per read).
        var bytes: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        guard utf8.count == 36, utf8[8] == UInt8(ascii: "-"), utf8[13] == UInt8(ascii: "-"), utf8[18] == UInt8(ascii: "-"),
            utf8[23] == UInt8(ascii: "-")
        else { return nil }
        // Every digit is read, and whether all were hex is asked once at the end: random hex digits
        // taken apart one branch each would mispredict about every other one.
        var invalid: UInt8 = 0
        withUnsafeMutableBytes(of: &bytes) { out in
            var index = 0
            for position in 0..<16 {
                if index == 8 || index == 13 || index == 18 || index == 23 { index += 1 }
                let high = Self.nibble(utf8[index])
                let low = Self.nibble(utf8[index + 1])
                invalid |= high | low
                out[position] = high &<< 4 | low & 0x0F
                index += 2
            }
        }
        guard invalid & 0xF0 == 0 else { return nil }
        self.uuid = UUID(uuid: bytes)
    }

    /// A hex digit's value (either case), or 0xFF for any other byte; selects, not branches.
    @inline(__always)
    private static func nibble(_ byte: UInt8) -> UInt8 {
        let digit = byte &- UInt8(ascii: "0")
        let letter = (byte | 0x20) &- UInt8(ascii: "a")
        let letterValue = letter < 6 ? letter &+ 10 : 0xFF
        return digit < 10 ? digit : letterValue
    }

    /// A new random identifier.
    public static func random() -> ItemID { ItemID(UUID()) }

    /// The canonical lowercase form. By hand, not `uuid.uuidString.lowercased()`: the id is bound as
    /// text on every item read and write.
    public var description: String {
        String(unsafeUninitializedCapacity: 36) { out in
            var count = 0
            forEachCanonicalByte { byte in
                out[count] = byte
                count += 1
            }
            return count
        }
    }

    /// The canonical form's 36 ASCII bytes in order (`description`, and `JSONWriter.itemID`
    /// without a `String` in between). Inlinable: the JSON writer calls it for every id it writes.
    @inlinable
    public func forEachCanonicalByte(_ body: (UInt8) -> Void) {
        withUnsafeBytes(of: uuid.uuid) { uuid in
            for (position, byte) in uuid.enumerated() {
                if position == 4 || position == 6 || position == 8 || position == 10 { body(UInt8(ascii: "-")) }
                body(Hex.digit(byte >> 4))
                body(Hex.digit(byte & 0x0F))
            }
        }
    }

    public static func < (lhs: ItemID, rhs: ItemID) -> Bool { lhs.description < rhs.description }

    /// The 16 bytes as two words: what `==` compares and `hash(into:)` feeds the hasher.
    @inlinable
    var words: (UInt64, UInt64) {
        withUnsafeBytes(of: uuid.uuid) { ($0.loadUnaligned(as: UInt64.self), $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self)) }
    }

    // By hand: `UUID`'s own hash feeds its bytes through `Hasher.combine(bytes:)`, whose buffering
    // costs more than two words; ids key every dictionary of items, on the server and in the SDK.
    @inlinable
    public static func == (lhs: ItemID, rhs: ItemID) -> Bool { lhs.words == rhs.words }

    @inlinable
    public func hash(into hasher: inout Hasher) {
        let (high, low) = words
        hasher.combine(high)
        hasher.combine(low)
    }
}
