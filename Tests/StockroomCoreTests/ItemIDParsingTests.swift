import Foundation
import Testing

@testable import StockroomCore

/// `ItemID(utf8:)` reads a UUID's text by hand: exactly `8-4-4-4-12` hex digits in either case
/// (Foundation's `UUID(uuidString:)` takes more, a stray leading byte among them), to the value
/// Foundation reads from that text.
@Suite("Item ids read from text")
struct ItemIDParsingTests {
    static func parse(_ bytes: [UInt8]) -> ItemID? {
        bytes.withUnsafeBytes { ItemID(utf8: $0) }
    }

    @Test("lower, upper and mixed case read as Foundation reads them")
    func anyCase() {
        for _ in 0..<1_000 {
            let uuid = UUID()
            let lower = uuid.uuidString.lowercased()
            let mixed = String(uuid.uuidString.map { Bool.random() ? Character($0.lowercased()) : $0 })
            for text in [uuid.uuidString, lower, mixed] {
                #expect(Self.parse(Array(text.utf8)) == ItemID(uuid), "\(text)")
                #expect(ItemID(text) == ItemID(uuid))
            }
        }
    }

    /// The form by its definition: a dash at 8, 13, 18 and 23, a hex digit everywhere else.
    static func isCanonical(_ bytes: [UInt8]) -> Bool {
        bytes.count == 36
            && bytes.indices.allSatisfy { index in
                [8, 13, 18, 23].contains(index) ? bytes[index] == UInt8(ascii: "-") : Character(UnicodeScalar(bytes[index])).isHexDigit
            }
    }

    @Test("every byte at every position is taken or refused by the form")
    func everyByteAtEveryPosition() {
        let text = Array("6f1c2e4a-1111-4000-8000-00000000abcd".utf8)
        for position in text.indices {
            for byte in UInt8.min...UInt8.max {
                var changed = text
                changed[position] = byte
                let expected = Self.isCanonical(changed) ? UUID(uuidString: String(decoding: changed, as: UTF8.self)).map(ItemID.init) : nil
                #expect(Self.parse(changed) == expected, "\(byte) at \(position)")
            }
        }
    }

    @Test("wrong lengths are refused")
    func wrongLengths() {
        let text = Array("6f1c2e4a-1111-4000-8000-00000000abcd".utf8)
        #expect(Self.parse(Array(text.dropLast())) == nil)
        #expect(Self.parse(text + [UInt8(ascii: "0")]) == nil)
        #expect(Self.parse([]) == nil)
    }
}
