import Foundation
import Testing

@testable import StockroomCore
@testable import StockroomWire

/// `Draft(fastJSON:)` must decode what it takes exactly as `JSONDecoder` does, and take nothing
/// `JSONDecoder` refuses: the server falls back to `JSONDecoder` only when it answers nil.
@Suite("Drafts read without JSONDecoder")
struct DraftFastJSONTests {
    static func fast(_ text: [UInt8]) -> Draft? {
        text.withUnsafeBytes { Draft(fastJSON: $0) }
    }

    static func slow(_ text: [UInt8]) -> Draft? {
        try? JSONCoding.decoder().decode(Draft.self, from: Data(text))
    }

    /// A JSON text of `draft`, its keys in a random order with random whitespace around every token.
    static func text(of draft: Draft, using generator: inout some RandomNumberGenerator) -> String {
        let spaces = ["", "", " ", "\n", "\t", "\r\n  "]
        func space() -> String { spaces.randomElement(using: &generator)! }
        func object(_ members: [(String, String)]) -> String {
            "{" + space() + members.shuffled(using: &generator).map { "\"\($0.0)\"" + space() + ":" + space() + $0.1 + space() }
                .joined(separator: "," + space()) + "}"
        }
        func number(_ value: Double) -> String {
            // Swift prints the shortest text that reads back to the same double: 0.1, 1.0, 0.30000000000000004.
            value.description
        }
        let color =
            draft.color.map { color in
                object([("name", "\"\(color.name)\""), ("red", number(color.red)), ("green", number(color.green)), ("blue", number(color.blue))])
            } ?? "null"
        let status =
            switch draft.status {
            case .inStock(let quantity): object([("inStock", object([("quantity", String(quantity))]))])
            case .outOfStock(let isOnBackOrder): object([("outOfStock", object([("isOnBackOrder", String(isOnBackOrder))]))])
            }
        return space() + object([("name", "\"\(draft.name)\""), ("color", color), ("status", status)]) + space()
    }

    static func randomDraft(using generator: inout some RandomNumberGenerator) -> Draft {
        let names = ["", "Keyboard", "  Bluetooth Keyboard ", "Ärger", "日本語のキーボード", "emoji 🎹", "a/b", "x\u{2028}y"]
        let color: Color? =
            Bool.random(using: &generator)
            ? Color(
                name: names.randomElement(using: &generator)!, red: [Double.random(in: 0...1, using: &generator), 0.000_009_1].randomElement(using: &generator)!,
                green: [0, 1, 0.5, 0.1].randomElement(using: &generator)!, blue: Double(Int.random(in: 0...255, using: &generator)) / 255)
            : nil
        let status: Status =
            Bool.random(using: &generator)
            ? .inStock(quantity: [0, 1, 7, -3, 1_000_000, Int.max, Int.min + 1].randomElement(using: &generator)!)
            : .outOfStock(isOnBackOrder: Bool.random(using: &generator))
        return Draft(name: names.randomElement(using: &generator)!, color: color, status: status)
    }

    @Test("what clients send decodes to JSONDecoder's value, in any key order and spacing")
    func agreesWithJSONDecoder() throws {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let draft = Self.randomDraft(using: &generator)
            let text = Array(Self.text(of: draft, using: &generator).utf8)
            let slow = try #require(Self.slow(text), "JSONDecoder refused \(String(decoding: text, as: UTF8.self))")
            #expect(slow == draft)
            // Swift prints a tiny component with an exponent (9.1e-06), which the fast path leaves to JSONDecoder.
            if String(decoding: text, as: UTF8.self).contains("e-") {
                #expect(Self.fast(text) == nil)
            } else {
                #expect(Self.fast(text) == slow, "\(String(decoding: text, as: UTF8.self))")
            }
        }
        // As JSONEncoder writes it, too.
        let encoded = try JSONCoding.encoder().encode(Draft(name: "Mouse", color: nil, status: .outOfStock(isOnBackOrder: true)))
        #expect(Self.fast(Array(encoded)) == Draft(name: "Mouse", color: nil, status: .outOfStock(isOnBackOrder: true)))
    }

    @Test("anything but the common shape is left to JSONDecoder", arguments: [
        #"{"name":"a\"b","color":null,"status":{"inStock":{"quantity":1}}}"#,  // an escape
        #"{"name":"a","color":null,"status":{"inStock":{"quantity":1}},"extra":1}"#,  // an unknown key
        #"{"name":"a","name":"b","color":null,"status":{"inStock":{"quantity":1}}}"#,  // a repeated key
        #"{"name":"a","color":null,"status":{"inStock":{"quantity":1e2}}}"#,  // an exponent
        #"{"name":"a","color":null,"status":{"inStock":{"quantity":1.0}}}"#,  // a fraction for an integer
        #"{"name":"a","color":null,"status":{"inStock":{"quantity":01}}}"#,  // a leading zero
        #"{"name":"a","color":null,"status":{"inStock":{"quantity":-0}}}"#,
        #"{"name":"a","color":null,"status":{"inStock":{"quantity":99999999999999999999}}}"#,  // beyond Int
        #"{"name":"a","color":null,"status":{"inStock":{"quantity":1}}} x"#,  // trailing bytes
        #"{"name":"a","color":null,"status":{"inStock":{"quantity":1}},}"#,  // a trailing comma
        #"{"color":null,"status":{"inStock":{"quantity":1}}}"#,  // no name
        #"{"name":"a","color":null}"#,  // no status
        #"{"name":"a","color":null,"status":{}}"#,
        #"{"name":"a","color":null,"status":{"inStock":{"quantity":1},"outOfStock":{"isOnBackOrder":true}}}"#,
        #"{"name":"a","color":null,"status":{"outOfStock":{"isOnBackOrder":1}}}"#,
        #"{"name":"a","color":{"name":"c","red":1,"green":1},"status":{"inStock":{"quantity":1}}}"#,  // no blue
        #"{"name":"a","color":{"name":"c","red":1.,"green":1,"blue":1},"status":{"inStock":{"quantity":1}}}"#,
        #"{"name":"a","color":nul,"status":{"inStock":{"quantity":1}}}"#,
        #"{"name":"a","color":nullx,"status":{"inStock":{"quantity":1}}}"#,
        #"{"name":1,"color":null,"status":{"inStock":{"quantity":1}}}"#,
        #"["name"]"#, "", " ", "{", "null",
    ])
    func declines(_ text: String) {
        #expect(Self.fast(Array(text.utf8)) == nil)
    }

    /// Components of up to 15 digits are read without `strtod`, longer ones with it: every length
    /// from 1 to 19 digits, either side of the point, reads to JSONDecoder's double.
    @Test("colour components of every length read as JSONDecoder reads them")
    func componentsOfEveryLength() throws {
        var generator = SystemRandomNumberGenerator()
        var taken = 0
        for _ in 0..<3_000 {
            let whole = Bool.random(using: &generator) ? "0" : "1"
            let fraction = String((0..<Int.random(in: 0...18, using: &generator)).map { _ in "0123456789".randomElement(using: &generator)! })
            let component = fraction.isEmpty ? whole : whole + "." + fraction
            let text = Array(#"{"name":"a","color":{"name":"c","red":\#(component),"green":0.5,"blue":1},"status":{"inStock":{"quantity":1}}}"#.utf8)
            let slow = Self.slow(text)
            #expect(Self.fast(text) == slow, "\(component)")
            if slow != nil { taken += 1 }
        }
        #expect(taken > 0)
    }

    @Test("quantities at Int's edges read as JSONDecoder reads them", arguments: [
        ("9223372036854775807", Int.max), ("-9223372036854775808", Int.min), ("-9223372036854775807", Int.min + 1),
        ("9223372036854775808", nil), ("-9223372036854775809", nil), ("92233720368547758070", nil), ("0", 0), ("-1", -1), ("10", 10),
    ] as [(String, Int?)])
    func quantitiesAtTheEdges(_ text: String, quantity: Int?) {
        let bytes = Array(#"{"name":"a","color":null,"status":{"inStock":{"quantity":\#(text)}}}"#.utf8)
        #expect(Self.fast(bytes) == quantity.map { Draft(name: "a", color: nil, status: .inStock(quantity: $0)) })
        if let quantity { #expect(Self.slow(bytes)?.status == .inStock(quantity: quantity)) }
    }

    @Test("invalid UTF-8 and control characters in a name are left to JSONDecoder")
    func declinesBadStrings() {
        let prefix = Array(#"{"name":""#.utf8)
        let suffix = Array(#"","color":null,"status":{"inStock":{"quantity":1}}}"#.utf8)
        for bad: [UInt8] in [[0xFF], [0xC3], [0xED, 0xA0, 0x80], [0x00], [0x0A], [0x1F]] {
            #expect(Self.fast(prefix + bad + suffix) == nil)
        }
        #expect(Self.fast(prefix + Array("ok".utf8) + suffix) == Draft(name: "ok", color: nil, status: .inStock(quantity: 1)))
    }

    @Test("a damaged text it still takes decodes to what JSONDecoder makes of it")
    func damagedTextsAgree() {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array(#"{}[]":,. -0123456789eEtruefalsn\"#.utf8) + [0x00, 0x0A, 0xC3, 0xFF]
        var taken = 0
        for _ in 0..<20_000 {
            let text = damaged(Array(Self.text(of: Self.randomDraft(using: &generator), using: &generator).utf8), alphabet: alphabet, using: &generator)
            guard let fast = Self.fast(text) else { continue }
            taken += 1
            #expect(Self.slow(text) == fast, "\(String(decoding: text, as: UTF8.self))")
        }
        // Some damage leaves a valid draft (a digit for a digit, a space for a space).
        #expect(taken > 0)
    }

    struct CommandRequest: Codable, Equatable {
        let command: Command
    }

    static func fastCommand(_ text: String) -> Command? {
        Array(text.utf8).withUnsafeBytes { Command(fastRequestJSON: $0) }
    }

    static func slowCommand(_ text: String) -> Command? {
        (try? JSONCoding.decoder().decode(CommandRequest.self, from: Data(text.utf8)))?.command
    }

    @Test("an edit's commands decode to JSONDecoder's value; the others are left to it")
    func commandsAgreeWithJSONDecoder() throws {
        var generator = SystemRandomNumberGenerator()
        let id = ItemID.random()
        var taken: Set<String> = []
        for _ in 0..<500 {
            let draft = Self.randomDraft(using: &generator)
            let commands: [Command] = [
                .openEdit(itemID: id), .openDuplicate(itemID: id), .openDeleteAlert(itemID: id), .updateDraft(draft: draft), .save(), .cancel,
                .pop, .popToRoot, .openAdd, .confirmDelete, .selectTab(tab: .settings), .push(route: .item(id: id)),
            ]
            for command in commands {
                let text = String(decoding: try JSONCoding.encoder().encode(CommandRequest(command: command)), as: UTF8.self)
                let fast = Self.fastCommand(text)
                #expect(Self.slowCommand(text) == command)
                if let fast {
                    #expect(fast == command, "\(text)")
                    taken.insert(command.name)
                }
            }
        }
        #expect(taken == ["openEdit", "openDuplicate", "openDeleteAlert", "updateDraft", "save", "cancel", "pop", "popToRoot", "openAdd", "confirmDelete"])
    }

    @Test("a command request of another shape is left to JSONDecoder", arguments: [
        #"{"command":{"save":{"x":1}}}"#,  // a member where none is expected
        #"{"command":{"save":{},"cancel":{}}}"#,  // two commands
        #"{"command":{"openEdit":{"itemID":"not-a-uuid"}}}"#,
        #"{"command":{"openEdit":{"itemID":"0A0B0C0D-0000-4000-8000-00000000000A"}}}"#,  // as ItemID decides
        #"{"command":{"openEdit":{}}}"#,
        #"{"command":{"updateDraft":{"draft":{"name":"a"}}}}"#,
        #"{"command":{"selectTab":{"tab":"settings"}}}"#,  // not an edit's command
        #"{"command":{"save":{}},"command":{"save":{}}}"#,
        #"{"command":{"save":{}},"x":1}"#,
        #"{"command":{}}"#, #"{"command":"save"}"#, #"{}"#,
    ])
    func commandDeclines(_ text: String) {
        let fast = Self.fastCommand(text)
        // Declined, or (an uppercase UUID, should ItemID take it) what JSONDecoder makes of it.
        #expect(fast == nil || fast == Self.slowCommand(text), "\(text)")
        if !text.contains("0A0B0C0D") { #expect(fast == nil, "\(text)") }
    }
}
