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
        guard utf8.count == 36 else { return nil }
        let parsed = withUnsafeMutableBytes(of: &bytes) { out -> Bool in
            var index = 0
            for position in 0..<16 {
                if index == 8 || index == 13 || index == 18 || index == 23 {
                    guard utf8[index] == UInt8(ascii: "-") else { return false }
                    index += 1
                }
                guard let high = Self.hexValue(utf8[index]), let low = Self.hexValue(utf8[index + 1]) else { return false }
                out[position] = high << 4 | low
                index += 2
            }
            return true
        }
        guard parsed else { return nil }
        self.uuid = UUID(uuid: bytes)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
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
