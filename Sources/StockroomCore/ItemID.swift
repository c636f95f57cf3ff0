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
        // stored id is parsed once per read). The 32 digits are read as four words of eight
        // (`8-4-4-4-12`: the middle groups two by two), each turned into four bytes at once.
        guard utf8.count == 36, utf8[8] == UInt8(ascii: "-"), utf8[13] == UInt8(ascii: "-"), utf8[18] == UInt8(ascii: "-"),
            utf8[23] == UInt8(ascii: "-")
        else { return nil }
        func word(_ offset: Int) -> UInt64 { UInt64(littleEndian: utf8.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) }
        func half(_ offset: Int) -> UInt64 { UInt64(UInt32(littleEndian: utf8.loadUnaligned(fromByteOffset: offset, as: UInt32.self))) }
        let (first, firstValid) = Self.hexWord(word(0))
        let (second, secondValid) = Self.hexWord(half(9) | half(14) << 32)
        let (third, thirdValid) = Self.hexWord(half(19) | half(24) << 32)
        let (fourth, fourthValid) = Self.hexWord(word(28))
        guard firstValid && secondValid && thirdValid && fourthValid else { return nil }
        var bytes: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &bytes) { out in
            out.storeBytes(of: first.littleEndian, toByteOffset: 0, as: UInt32.self)
            out.storeBytes(of: second.littleEndian, toByteOffset: 4, as: UInt32.self)
            out.storeBytes(of: third.littleEndian, toByteOffset: 8, as: UInt32.self)
            out.storeBytes(of: fourth.littleEndian, toByteOffset: 12, as: UInt32.self)
        }
        self.uuid = UUID(uuid: bytes)
    }

    /// Eight ASCII hex digits (either case), the first in the lowest byte of `word`, as the four
    /// bytes they write (the first byte lowest), and whether all eight were hex digits. Branch-free:
    /// random digits taken apart one branch each would mispredict about every other one.
    @inline(__always)
    private static func hexWord(_ word: UInt64) -> (UInt32, Bool) {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let high: UInt64 = 0x8080_8080_8080_8080
        // Below 0x80 every byte stays within its own byte in the sums below.
        let ascii = word & high == 0
        let lower = word | 0x2020_2020_2020_2020
        // The high bit of a byte set where it is at least `low` and at most `top`.
        func within(_ value: UInt64, _ low: UInt8, _ top: UInt8) -> UInt64 {
            let atLeast = value &+ ones &* UInt64(0x80 - low)
            let above = value &+ ones &* UInt64(0x7F - top)
            return atLeast & ~above & high
        }
        let digits = within(word, UInt8(ascii: "0"), UInt8(ascii: "9"))
        let letters = within(lower, UInt8(ascii: "a"), UInt8(ascii: "f"))
        let valid = ascii && digits | letters == high
        // '0'...'9' and 'a'...'f' end in their value, and a letter's 1...6 is nine short of it.
        let nibbles = (lower & 0x0F0F_0F0F_0F0F_0F0F) &+ (letters >> 7) &* 9
        // Two digits to a byte (the first the high nibble), then the four bytes together.
        var packed = (nibbles << 4 | nibbles >> 8) & 0x00FF_00FF_00FF_00FF
        packed = (packed | packed >> 8) & 0x0000_FFFF_0000_FFFF
        packed = (packed | packed >> 16) & 0xFFFF_FFFF
        return (UInt32(truncatingIfNeeded: packed), valid)
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
