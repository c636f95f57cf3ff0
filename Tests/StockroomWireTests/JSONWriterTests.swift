import Foundation
import Testing
@testable import StockroomCore
@testable import StockroomWire
import TestSupport

/// `JSONWriter` writes the same documents as `JSONCoding.encoder()`, which it replaces on hot paths.
@Suite struct JSONWriterTests {
    static let id = ItemID("6F9619FF-8B86-D011-B42D-00C04FC964FF")!

    static let items: [Item] = [
        Item(
            id: id, name: "Keyboard", color: Color(name: "Red", red: 1, green: 0, blue: 0.25),
            status: .inStock(quantity: 100), version: 3,
            createdAt: Timestamp.date(milliseconds: 1_763_791_200_123), updatedAt: Timestamp.date(milliseconds: 1_763_791_200_999)),
        Item(
            id: .random(), name: "quote \" backslash \\ slash / tab \t newline \n nul \u{0} bell \u{7} del \u{7F}",
            color: nil, status: .outOfStock(isOnBackOrder: true), version: 1,
            createdAt: Timestamp.date(milliseconds: 0), updatedAt: Timestamp.date(milliseconds: 951_782_400_000)),
        Item(
            id: .random(), name: "émoji 👩‍👩‍👧 RTL \u{200F}שלום e\u{301}", color: Color(name: "Ünïcode", red: 0.1, green: 1e-7, blue: 0.3333333333333333),
            status: .inStock(quantity: 1_000_000_000), version: Int.max,
            createdAt: Timestamp.date(milliseconds: -1), updatedAt: Timestamp.date(milliseconds: 253_402_300_799_999)),
        Item(
            id: .random(), name: "x", color: nil, status: .outOfStock(isOnBackOrder: false), version: 2,
            createdAt: Timestamp.date(milliseconds: 4_107_542_400_000), updatedAt: Timestamp.date(milliseconds: 1_709_164_800_001)),
    ]

    @Test(arguments: items)
    func anItemWritesTheDocumentTheEncoderWrites(item: Item) throws {
        let written = Data(item.jsonBytes)
        #expect(try JSON.parse(written) == JSON.parse(try JSONCoding.encoder().encode(item)))
        #expect(try JSONCoding.decoder().decode(Item.self, from: written) == item)
    }

    static let navigations: [Navigation] = {
        let draft = Draft(name: "Key\"board\u{1}", color: Color(name: "Red", red: 1, green: 0.5, blue: 0), status: .inStock(quantity: 3))
        let states: [NavigationState] = [
            .root,
            NavigationState(tab: .settings, path: [.item(id: id), .item(id: .random())], destination: .add(draft: .blank)),
            NavigationState(tab: .inventory, path: [.item(id: id)], destination: .edit(itemID: id, baseVersion: 7, draft: draft)),
            NavigationState(destination: .duplicate(itemID: id, draft: draft)),
            NavigationState(destination: .deleteAlert(for: Fixture.keyboard)),
            NavigationState(destination: .deleteAlert(itemID: id, alert: .deleteItem(name: nil))),
            NavigationState(
                path: [.item(id: id)],
                destination: .conflict(itemID: id, baseVersion: 2, draft: draft, current: Fixture.mouse),
                checkpoints: ["root": Checkpoint(depth: 0), "list": Checkpoint(depth: 1, value: .object(["picked": .array([.string("a\"b"), .number(2.5), .bool(true), .null])]))]),
            NavigationState(destination: .conflict(itemID: id, baseVersion: 2, draft: draft, current: nil)),
        ]
        return states.enumerated().map { index, state in
            Navigation(
                clientID: ClientID("device-\(index)")!, state: state, version: index,
                updatedAt: index == 0 ? nil : Timestamp.date(milliseconds: 1_763_791_200_123 + Int64(index)))
        }
    }()

    @Test(arguments: navigations)
    func aNavigationWritesTheDocumentTheEncoderWrites(navigation: Navigation) throws {
        let written = Data(navigation.jsonBytes)
        #expect(try JSON.parse(written) == JSON.parse(try JSONCoding.encoder().encode(navigation)))
        #expect(try JSONCoding.decoder().decode(Navigation.self, from: written) == navigation)
        let state = Data(navigation.state.jsonBytes)
        #expect(try JSON.parse(state) == JSON.parse(try JSONCoding.encoder().encode(navigation.state)))
        #expect(try JSONCoding.decoder().decode(NavigationState.self, from: state) == navigation.state)
    }

    /// A command's write stores the state's JSON and logs the navigation's, written around it.
    @Test(arguments: navigations)
    func aNavigationWrittenAroundItsStatesJSONIsTheSameBytes(navigation: Navigation) {
        #expect(navigation.jsonBytes(stateJSON: navigation.state.jsonBytes) == navigation.jsonBytes)
    }

    @Test func keysComeInDeclarationOrderAndIdsInLowercase() {
        let text = String(decoding: Self.items[0].jsonBytes, as: UTF8.self)
        #expect(text == #"{"id":"6f9619ff-8b86-d011-b42d-00c04fc964ff","name":"Keyboard","color":{"name":"Red","red":1,"green":0,"blue":0.25},"status":{"inStock":{"quantity":100}},"version":3,"createdAt":"2025-11-22T06:00:00.123Z","updatedAt":"2025-11-22T06:00:00.999Z"}"#)
    }

    @Test func timestampsMatchTheFormatterAcrossLeapDaysAndBefore1970() {
        // Dates in years 1900-2400, where a Date holds every millisecond exactly.
        var milliseconds: [Int64] = [0, -1, -86_400_000, 951_782_400_000, 951_868_799_999, 4_107_542_400_000]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 { milliseconds.append(Int64.random(in: -2_208_988_800_000...13_569_465_600_000, using: &generator)) }
        for value in milliseconds {
            var json = JSONWriter()
            json.timestamp(milliseconds: value)
            #expect(json.string == "\"" + Timestamp.format(Timestamp.date(milliseconds: value)) + "\"", "at \(value) ms")
        }
    }

    @Test(arguments: [
        (Int64(-62_135_596_800_000), "0001-01-01T00:00:00.000Z"),
        (Int64(253_402_300_799_999), "9999-12-31T23:59:59.999Z"),
        (Int64(253_402_300_800_000), "10000-01-01T00:00:00.000Z"),
        (Int64(-1), "1969-12-31T23:59:59.999Z"),
        (Int64(951_825_600_000), "2000-02-29T12:00:00.000Z"),
    ])
    func timestampsAtTheEdgesOfTheCalendar(milliseconds: Int64, expected: String) {
        var json = JSONWriter()
        json.timestamp(milliseconds: milliseconds)
        #expect(json.string == "\"\(expected)\"")
    }

    @Test func integersOfEveryMagnitudeAndSign() {
        for value in [0, 1, -1, 9, 10, 99, 100, 1_000_000_000, Int.max, Int.min, -42] {
            var json = JSONWriter()
            json.int(value)
            #expect(json.string == String(value))
        }
    }

    /// Numbers as `JSONEncoder` writes them (`description` without a trailing `.0`), the short
    /// decimals `double` writes itself and every other form it leaves to `description`.
    @Test func doublesAsTheEncoderWritesThem() throws {
        var values: [Double] = [
            0, -0.0, 1, -1, 0.5, 0.25, 0.1, 0.2, 0.3, 1.0 / 3, 2.0 / 3, .pi, 1e-4, 0.00011, 9.99e-5, 1e-5, 1e-7,
            0.123456, 0.1234567, 999_999_999, 999_999_999.5, 1e9, 1e9 + 0.5, 1e15, 1e16, 9_007_199_254_740_992,
            .greatestFiniteMagnitude, .leastNonzeroMagnitude, .leastNormalMagnitude, 0.1 + 0.2, 123.456, -123.456,
        ]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            let decimals = Int.random(in: 0...8, using: &generator)
            let units = Double(Int.random(in: -2_000_000_000...2_000_000_000, using: &generator))
            values.append(units / pow(10, Double(decimals)))
            values.append(Double.random(in: 0...1, using: &generator))
            let bits = UInt64.random(in: .min ... .max, using: &generator)
            if Double(bitPattern: bits).isFinite { values.append(Double(bitPattern: bits)) }
        }
        let encoder = JSONEncoder()
        for value in values {
            var json = JSONWriter()
            json.double(value)
            var expected = value.description
            if expected.hasSuffix(".0") { expected.removeLast(2) }
            #expect(json.string == expected, "\(value)")
            #expect(json.string == String(decoding: try encoder.encode(value), as: UTF8.self), "\(value)")
            #expect(Double(json.string) == value)
        }
    }
}

/// A navigation read: `Navigation`'s fields and its device's presence, written as the encoder writes them.
@Suite("NavigationList and PresentNavigation")
struct NavigationListJSONTests {
    static let navigation = Navigation(
        clientID: "phone", state: NavigationState(destination: .deleteAlert(for: Fixture.keyboard)), version: 3, updatedAt: Fixture.t0)

    @Test func aListWritesWhatTheEncoderWritesAndReadsBack() throws {
        let list = NavigationList(
            clients: [Self.navigation, .unwritten(clientID: "tablet")],
            presence: ["phone": Presence(clientID: "phone", online: true, lastSeenAt: Fixture.t0)])
        let written = Data(list.jsonBytes)
        #expect(try JSON.parse(written) == JSON.parse(try JSONCoding.encoder().encode(list)))
        let read = try JSONCoding.decoder().decode(NavigationList.self, from: written)
        #expect(read.clients == list.clients)
        #expect(read.presence["phone"] == list.presence["phone"])
        #expect(read.presence["tablet"] == Presence(clientID: "tablet", online: false, lastSeenAt: nil), "none known: offline, never seen")
    }

    @Test func aReadWithoutPresenceFromAnOlderServerReadsAsOfflineNeverSeen() throws {
        let older = Data(#"{"clients":[\#(String(decoding: Self.navigation.jsonBytes, as: UTF8.self))]}"#.utf8)
        let read = try JSONCoding.decoder().decode(NavigationList.self, from: older)
        #expect(read.clients == [Self.navigation])
        #expect(read.presence["phone"] == Presence(clientID: "phone", online: false, lastSeenAt: nil))
    }
}
