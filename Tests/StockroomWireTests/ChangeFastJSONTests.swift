import Foundation
import Testing

@testable import StockroomCore
@testable import StockroomWire

/// `Change(fastJSON:)` must decode what it takes exactly as `JSONDecoder` does, and take nothing
/// `JSONDecoder` refuses: the SDK falls back to `JSONDecoder` only when it answers nil.
@Suite("Changes read without JSONDecoder")
struct ChangeFastJSONTests {
    static func fast(_ text: [UInt8]) -> Change? {
        text.withUnsafeBytes { Change(fastJSON: $0) }
    }

    static func slow(_ text: [UInt8]) -> Change? {
        try? JSONCoding.decoder().decode(Change.self, from: Data(text))
    }

    static let epoch = "9f86d081884c7d659a2feaa0c55ad015"

    static func randomItem(using generator: inout some RandomNumberGenerator) -> Item {
        let draft = DraftFastJSONTests.randomDraft(using: &generator)
        let created = Int64.random(in: 0...4_102_444_800_000, using: &generator)
        return Item(
            id: ItemID(UUID()), name: draft.name, color: draft.color, status: draft.status, version: Int.random(in: 1...1_000, using: &generator),
            createdAt: Timestamp.date(milliseconds: created), updatedAt: Timestamp.date(milliseconds: created + Int64.random(in: 0...1_000_000, using: &generator)))
    }

    /// An item change as the server writes it (`ChangeJSON`), and the change it says.
    static func serverText(using generator: inout some RandomNumberGenerator) -> (text: [UInt8], change: Change) {
        let item = randomItem(using: &generator)
        let delete = Int.random(in: 0..<4, using: &generator) == 0
        let move: ChangeMove? = [nil, nil, .in, .out].randomElement(using: &generator)!
        let seq = Int64.random(in: 1...Int64(Int32.max), using: &generator)
        let clientID: ClientID? = Bool.random(using: &generator) ? ClientID("phone-\(Int.random(in: 0...99, using: &generator))")! : nil
        let key: String? = Bool.random(using: &generator) ? UUID().uuidString : nil
        let at = Timestamp.milliseconds(item.updatedAt)
        var json = JSONWriter()
        ChangeJSON.write(
            seq: seq, epoch: epoch.utf8, entity: ChangeEntity.item.rawValue, op: (delete ? ChangeOp.delete : .upsert).rawValue,
            id: item.id.description, value: delete ? nil : item.jsonBytes, originClientID: clientID?.rawValue, originIdempotencyKey: key, at: at,
            move: move, to: &json)
        let change = Change(
            seq: Int(seq), cursor: FeedCursor(epoch: epoch, seq: seq), entity: .item, operation: delete ? .delete : .upsert, move: move,
            id: item.id.description, value: delete ? nil : .item(item), origin: Change.Origin(clientID: clientID, idempotencyKey: key),
            at: Timestamp.date(milliseconds: at))
        return (json.bytes, change)
    }

    /// Swift prints a tiny colour component with an exponent (9.1e-06), which is left to JSONDecoder.
    static func hasExponent(_ change: Change) -> Bool {
        guard let color = change.item?.color else { return false }
        return [color.red, color.green, color.blue].contains { $0.description.contains("e") }
    }

    @Test("the server's item changes decode to JSONDecoder's value")
    func agreesWithJSONDecoder() throws {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let (text, change) = Self.serverText(using: &generator)
            let slow = try #require(Self.slow(text), "JSONDecoder refused \(String(decoding: text, as: UTF8.self))")
            #expect(slow == change)
            if Self.hasExponent(change) {
                #expect(Self.fast(text) == nil)
            } else {
                #expect(Self.fast(text) == slow, "\(String(decoding: text, as: UTF8.self))")
            }
        }
    }

    @Test("keys in any order and JSONEncoder's text decode the same")
    func anyOrder() throws {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<500 {
            let (_, change) = Self.serverText(using: &generator)
            let encoded = try JSONCoding.encoder().encode(change)
            let members = try #require(JSONSerialization.jsonObject(with: encoded) as? [String: Any]).keys.shuffled(using: &generator)
            // Each member's value re-encoded alone keeps its text (numbers included).
            var parts: [String] = []
            for key in members {
                let value: String =
                    switch key {
                    case "seq": String(change.seq)
                    case "cursor": "\"\(change.cursor.encoded)\""
                    case "entity": "\"item\""
                    case "op": "\"\(change.operation.rawValue)\""
                    case "move": change.move.map { "\"\($0.rawValue)\"" } ?? "null"
                    case "id": "\"\(change.id)\""
                    case "value": try change.item.map { String(decoding: try JSONCoding.encoder().encode($0), as: UTF8.self) } ?? "null"
                    case "origin": String(decoding: try JSONCoding.encoder().encode(change.origin), as: UTF8.self)
                    default: "\"\(Timestamp.format(change.at))\""
                    }
                parts.append("\"\(key)\" : \(value)")
            }
            let text = Array((" {" + parts.joined(separator: ",\n") + "} ").utf8)
            let slow = try #require(Self.slow(text))
            if Self.hasExponent(change) { continue }
            #expect(Self.fast(text) == slow, "\(String(decoding: text, as: UTF8.self))")
            #expect(Self.fast(Array(encoded)) == slow)
        }
    }

    static let item = #"{"id":"3e89d582-66d2-4de1-86ae-e18aa66a8e70","name":"Keyboard","color":null,"status":{"inStock":{"quantity":1}},"version":1,"createdAt":"2026-11-28T20:17:05.931Z","updatedAt":"2026-11-28T20:17:05.931Z"}"#
    static let head = #""seq":1,"cursor":"c1.ab.1","entity":"item","op":"upsert","id":"3e89d582-66d2-4de1-86ae-e18aa66a8e70""#
    static let origin = #""origin":{"clientID":null,"idempotencyKey":null}"#

    @Test("the common shape, and the same with what it leaves to JSONDecoder", arguments: [
        (#"{"# + head + #","value":"# + item + "," + origin + #","at":"2026-11-28T20:17:05.931Z"}"#, true),
        (#"{"# + head + #","value":null,"# + origin + #","at":"2026-11-28T20:17:05.931Z"}"#, true),
        (#"{"# + head + #","move":"in","value":"# + item + "," + origin + #","at":"2026-11-28T20:17:05.931Z"}"#, true),
        (#"{"# + head + #","value":"# + item + "," + origin + #","at":"2026-11-28T20:17:05.931Z","extra":1}"#, false),  // an unknown key
        (#"{"# + head + #","value":"# + item + "," + origin + #","at":"2026-11-28T20:17:05.931+01:00"}"#, true),  // an offset (read by Timestamp.parse, as JSONDecoder's is)
        (#"{"# + head + #","value":"# + item + "," + origin + "}", false),  // no time
        (#"{"# + head + #","value":"# + item + #","at":"2026-11-28T20:17:05.931Z"}"#, false),  // no origin
        (#"{"# + head + #","seq":2,"value":"# + item + "," + origin + #","at":"2026-11-28T20:17:05.931Z"}"#, false),  // a repeated key
        (#"{"# + head + #","value":"# + item + "," + origin + #","at":"2026-11-28T20:17:05.931Z"} x"#, false),  // trailing bytes
        (#"{"# + head + #","value":"# + item + "," + origin + #","at":"2026-13-28T20:17:05.931Z"}"#, false),  // month 13
        (#"{"# + head.replacingOccurrences(of: "c1.ab.1", with: "c1.0AbF.007") + #","value":null,"# + origin + #","at":"2026-11-28T20:17:05.931Z"}"#, true),
        (#"{"# + head.replacingOccurrences(of: "c1.ab.1", with: "c1.ab.+1") + #","value":null,"# + origin + #","at":"2026-11-28T20:17:05.931Z"}"#, false),
        (#"{"# + head.replacingOccurrences(of: "c1.ab.1", with: "c1..1") + #","value":null,"# + origin + #","at":"2026-11-28T20:17:05.931Z"}"#, false),
        (#"{"# + head.replacingOccurrences(of: "c1.ab.1", with: "c1.ab.99999999999999999999") + #","value":null,"# + origin + #","at":"2026-11-28T20:17:05.931Z"}"#, false),
        (#"{"# + head.replacingOccurrences(of: "c1.ab.1", with: "c2.ab.1") + #","value":null,"# + origin + #","at":"2026-11-28T20:17:05.931Z"}"#, false),
        (#"{"# + head.replacingOccurrences(of: "\"item\"", with: "\"navigation\"") + #","value":null,"# + origin + #","at":"2026-11-28T20:17:05.931Z"}"#, false),
        (#"{"# + head.replacingOccurrences(of: "upsert", with: "merge") + #","value":null,"# + origin + #","at":"2026-11-28T20:17:05.931Z"}"#, false),
        (#"{"# + head + #","move":"sideways","value":null,"# + origin + #","at":"2026-11-28T20:17:05.931Z"}"#, false),
        (#"{"# + head + #","value":"# + item.replacingOccurrences(of: "3e89", with: "zz89") + "," + origin + #","at":"2026-11-28T20:17:05.931Z"}"#, false),  // a bad item id
        (#"{"# + head + #","value":"# + item + #","origin":{"clientID":"a b","idempotencyKey":null},"at":"2026-11-28T20:17:05.931Z"}"#, false),  // a bad client id
        (#"{"# + head + #","value":"# + item.replacingOccurrences(of: #""version":1,"#, with: "") + "," + origin + #","at":"2026-11-28T20:17:05.931Z"}"#, false),
    ])
    func takesOnlyTheCommonShape(_ text: String, taken: Bool) throws {
        let bytes = Array(text.utf8)
        let fast = Self.fast(bytes)
        #expect((fast != nil) == taken)
        if let fast { #expect(Self.slow(bytes) == fast) }
    }

    /// Strings are read eight bytes at a time up to the first byte that needs a look of its own:
    /// such a byte at every offset of a name and of a cursor, either side of a word's edge.
    @Test("a quote, escape, control or non-ASCII byte at any offset of a string")
    func specialBytesAtEveryOffset() throws {
        let specials: [[UInt8]] = [Array(#"\""#.utf8), Array(#"\\"#.utf8), Array(#"\n"#.utf8), [0x0A], [0x1F], [0x7F], Array("é".utf8), [0xFF], [0x22]]
        let plain = Array(("{" + Self.head + ",\"value\":" + Self.item + "," + Self.origin + ",\"at\":\"2026-11-28T20:17:05.931Z\"}").utf8)
        for special in specials {
            for offset in 0...19 {
                let name = Array("abcdefghijklmnopqrst".utf8.prefix(offset)) + special + Array("uvwxyz0123456789".utf8)
                let text = plain.replacing(Array("Keyboard".utf8), with: name, maxReplacements: 1)
                let slow = Self.slow(text)
                if let fast = Self.fast(text) {
                    #expect(slow == fast, "\(String(decoding: text, as: UTF8.self))")
                } else {
                    // Left to JSONDecoder: an escape, a control character or invalid UTF-8.
                    #expect(special != Array("é".utf8), "\(offset): plain UTF-8 is read fast")
                }
            }
        }
        // In a cursor's epoch, where only ASCII is read fast: a long one is taken whole, and one
        // with a byte from 0x80 at any offset is not.
        let epoch = Array("0123456789abcdef0123456789abcdef".utf8)
        let long = plain.replacing(Array("c1.ab.1".utf8), with: Array("c1.".utf8) + epoch + Array(".1".utf8))
        #expect(Self.fast(long) == Self.slow(long) && Self.fast(long) != nil)
        for offset in epoch.indices {
            var damaged = epoch
            damaged[offset] = 0xC3
            #expect(Self.fast(plain.replacing(Array("c1.ab.1".utf8), with: Array("c1.".utf8) + damaged + Array(".1".utf8))) == nil)
        }
    }

    /// A feed's changes share one epoch: the cursor takes the known epoch's string when the text
    /// is the same, and its own otherwise.
    @Test("a cursor's epoch shared with the one known before")
    func knownEpoch() throws {
        let text = Array(("{" + Self.head + ",\"value\":null," + Self.origin + ",\"at\":\"2026-11-28T20:17:05.931Z\"}").utf8)
        let plain = try #require(Self.fast(text))
        for known in ["ab", "ac", "a", "abc", ""] {
            let shared = try #require(text.withUnsafeBytes { Change(fastJSON: $0, knownEpoch: known) })
            #expect(shared == plain)
            #expect(shared.cursor.epoch == "ab")
        }
    }

    /// A time read once is not parsed again when the same text comes back: times that differ
    /// from the one before, in one place or another, must each read as their own.
    @Test("a change's times, the same or differing by one character")
    func timesSameAndDifferent() throws {
        let times = ["2026-11-28T20:17:05.931Z", "2026-11-28T20:17:05.932Z", "2026-11-28T20:17:05.93Z", "2026-11-28T21:17:05.931Z", "2026-11-28T20:17:05.931+01:00"]
        for created in times {
            for updated in times {
                for at in times {
                    let item = Self.item.replacingOccurrences(of: #""createdAt":"2026-11-28T20:17:05.931Z","updatedAt":"2026-11-28T20:17:05.931Z""#,
                                                               with: #""createdAt":"\#(created)","updatedAt":"\#(updated)""#)
                    let text = Array((#"{"# + Self.head + #","value":"# + item + "," + Self.origin + #","at":"\#(at)"}"#).utf8)
                    let fast = try #require(Self.fast(text))
                    #expect(fast == Self.slow(text))
                    #expect(fast.item?.createdAt == Timestamp.parse(created))
                    #expect(fast.item?.updatedAt == Timestamp.parse(updated))
                    #expect(fast.at == Timestamp.parse(at))
                }
            }
        }
    }

    @Test("a damaged text it still takes decodes to what JSONDecoder makes of it")
    func damagedTextsAgree() {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array(#"{}[]":,. -0123456789eEtruefalsnZT\"#.utf8) + [0x00, 0x0A, 0xC3, 0xFF]
        var taken = 0
        for _ in 0..<10_000 {
            let text = damaged(Self.serverText(using: &generator).text, alphabet: alphabet, using: &generator)
            guard let fast = Self.fast(text) else { continue }
            taken += 1
            #expect(Self.slow(text) == fast, "\(String(decoding: text, as: UTF8.self))")
        }
        #expect(taken > 0)
    }
}
