import Foundation
import Testing
@testable import StockroomCore
@testable import StockroomWire
import TestSupport

@Suite("JSON coding")
struct CodingTests {
    // MARK: enums with payloads

    // MARK: enums of names

    /// Every name of every enum of names decodes to its case and encodes back to itself.
    @Test("enums of names: each case is its name")
    func namesRoundTrip() throws {
        func roundTrip<Names: WireNames & Equatable>(_: Names.Type) throws {
            for name in Names.allCases {
                let json = try JSONCoding.encoder().encode(name)
                #expect(String(decoding: json, as: UTF8.self) == "\"\(name.rawValue)\"")
                #expect(try JSONCoding.decoder().decode(Names.self, from: json) == name)
            }
        }
        try roundTrip(Tab.self)
        try roundTrip(Role.self)
        try roundTrip(ChangeEntity.self)
        try roundTrip(ChangeOp.self)
        try roundTrip(ChangeMove.self)
        try roundTrip(ButtonState.Role.self)
        try roundTrip(Command.OnConflict.self)
        try roundTrip(Command.ConflictChoice.self)
    }

    /// A name that is none of them says which names there are, not a Swift type's name.
    @Test("an unknown name lists the names")
    func unknownNameListsTheNames() {
        do {
            _ = try JSONCoding.decoder().decode([Role].self, from: Data(#"["editor","root"]"#.utf8))
            Issue.record("decoded an unknown role")
        } catch let DecodingError.dataCorrupted(context) {
            #expect(context.debugDescription == "'root' is not one of viewer, editor, admin")
            #expect(context.codingPath.map(\.intValue) == [1])
        } catch {
            Issue.record("\(error)")
        }
    }

    @Test("Status: one key per case, payload labels as keys")
    func status() throws {
        try expectShape(Status.inStock(quantity: 3), #"{"inStock": {"quantity": 3}}"#)
        try expectShape(Status.outOfStock(isOnBackOrder: true), #"{"outOfStock": {"isOnBackOrder": true}}"#)
        try expectShape(Status.outOfStock(isOnBackOrder: false), #"{"outOfStock": {"isOnBackOrder": false}}"#)
    }

    @Test("commands without payload are {\"case\": {}}", arguments: [
        (Command.cancel, #"{"cancel": {}}"#),
        (.pop, #"{"pop": {}}"#),
        (.popToRoot, #"{"popToRoot": {}}"#),
        (.openAdd, #"{"openAdd": {}}"#),
        (.save(), #"{"save": {}}"#),
        (.confirmDelete, #"{"confirmDelete": {}}"#),
    ])
    func commandsWithoutPayload(_ command: Command, _ text: String) throws {
        try expectShape(command, text)
    }

    @Test("{\"cancel\": {}} decodes to .cancel and {\"pop\": {}} to .pop")
    func cancelAndPop() throws {
        #expect(try decode(Command.self, #"{"cancel":{}}"#) == .cancel)
        #expect(try decode(Command.self, #"{"pop":{}}"#) == .pop)
        #expect(try encodedJSON(Command.cancel) == .object(["cancel": .object([:])]))
    }

    @Test("commands with payload", arguments: [
        (Command.selectTab(tab: .settings), #"{"selectTab": {"tab": "settings"}}"#),
        (.push(route: .item(id: Fixture.keyboardID)), #"{"push": {"route": {"item": {"id": "\#(kb)"}}}}"#),
        (.openEdit(itemID: Fixture.keyboardID), #"{"openEdit": {"itemID": "\#(kb)"}}"#),
        (.openDuplicate(itemID: Fixture.keyboardID), #"{"openDuplicate": {"itemID": "\#(kb)"}}"#),
        (.openDeleteAlert(itemID: Fixture.keyboardID), #"{"openDeleteAlert": {"itemID": "\#(kb)"}}"#),
        (.updateDraft(draft: Fixture.keyboard.draft), #"{"updateDraft": {"draft": \#(keyboardDraftJSON)}}"#),
        (.restore(fromClientID: "iphone-15.home_1"), #"{"restore": {"fromClientID": "iphone-15.home_1"}}"#),
        (.save(onConflict: .alert), #"{"save": {"onConflict": "alert"}}"#),
        (.resolveConflict(keep: .review), #"{"resolveConflict": {"keep": "review"}}"#),
        (.setCheckpoint(name: "list"), #"{"setCheckpoint": {"name": "list"}}"#),
        (.returnToCheckpoint(name: "list"), #"{"returnToCheckpoint": {"name": "list"}}"#),
        (.returnToCheckpoint(name: "list", value: .object(["picked": .string("x")])),
         #"{"returnToCheckpoint": {"name": "list", "value": {"picked": "x"}}}"#),
        (.openURL(url: "stockroom://inventory/new"), #"{"openURL": {"url": "stockroom://inventory/new"}}"#),
    ])
    func commandsWithPayload(_ command: Command, _ text: String) throws {
        try expectShape(command, text)
    }

    @Test("the payload shape covers every command case")
    func everyCommandShaped() throws {
        let commands: [Command] = [
            .selectTab(tab: .inventory), .push(route: .item(id: Fixture.mouseID)), .pop, .popToRoot, .openAdd,
            .openEdit(itemID: Fixture.mouseID), .openDuplicate(itemID: Fixture.mouseID),
            .openDeleteAlert(itemID: Fixture.mouseID), .updateDraft(draft: .blank), .save(), .cancel,
            .confirmDelete, .restore(fromClientID: "a"), .resolveConflict(keep: .mine), .setCheckpoint(name: "a"),
            .returnToCheckpoint(name: "a", value: .array([.number(1), .null])), .openURL(url: "stockroom://settings"),
        ]
        #expect(Set(commands.map(\.name)) == Fixture.allCommandCaseNames)
        for command in commands {
            guard case .object(let object) = try encodedJSON(command) else {
                Issue.record("\(command) is not an object")
                continue
            }
            #expect(Array(object.keys) == [command.name])
            #expect(try JSONCoding.decoder().decode(Command.self, from: JSONCoding.encoder().encode(command)) == command)
            #expect(try JSON.parse(Data(command.jsonBytes)) == encodedJSON(command))
        }
    }

    // MARK: navigation shapes

    @Test("Destination shapes")
    func destinations() throws {
        try expectShape(
            Destination.edit(itemID: Fixture.keyboardID, baseVersion: 1, draft: Fixture.keyboard.draft),
            #"{"edit": {"itemID": "\#(kb)", "baseVersion": 1, "draft": \#(keyboardDraftJSON)}}"#
        )
        try expectShape(
            Destination.add(draft: .blank),
            #"{"add": {"draft": {"name": "", "color": null, "status": {"inStock": {"quantity": 1}}}}}"#
        )
        try expectShape(
            Destination.duplicate(itemID: Fixture.keyboardID, draft: Fixture.keyboard.draft),
            #"{"duplicate": {"itemID": "\#(kb)", "draft": \#(keyboardDraftJSON)}}"#
        )
        try expectShape(
            Destination.deleteAlert(for: Fixture.keyboard),
            #"""
            {"deleteAlert": {"itemID": "\#(kb)", "alert": {
                "title": {"key": "deleteItem.title", "args": ["Keyboard"], "text": "Delete “Keyboard”?"},
                "message": {"key": "deleteItem.message", "args": [], "text": "This cannot be undone."},
                "buttons": [
                    {"label": {"key": "deleteItem.confirm", "args": [], "text": "Delete"}, "role": "destructive", "command": {"confirmDelete": {}}},
                    {"label": {"key": "common.cancel", "args": [], "text": "Cancel"}, "role": "cancel", "command": {"cancel": {}}}]}}}
            """#
        )
        // A deleteAlert without its alert (a client's PUT, a state stored before alerts were data) reads with the nameless alert.
        #expect(
            try JSONCoding.decoder().decode(Destination.self, from: Data(#"{"deleteAlert": {"itemID": "\#(kb)"}}"#.utf8))
                == .deleteAlert(itemID: Fixture.keyboardID, alert: .deleteItem(name: nil)))
    }

    @Test("Route and Tab shapes")
    func routeAndTab() throws {
        try expectShape(Route.item(id: Fixture.keyboardID), #"{"item": {"id": "\#(kb)"}}"#)
        try expectShape(Tab.inventory, #""inventory""#)
        try expectShape(Tab.settings, #""settings""#)
        try expectShape(Role.viewer, #""viewer""#)
        try expectShape(Role.editor, #""editor""#)
        try expectShape(Role.admin, #""admin""#)
    }

    @Test("a never-written Navigation: nulls are written, not left out")
    func unwrittenNavigation() throws {
        let json = try encodedJSON(Navigation.unwritten(clientID: "phone"))
        #expect(json == (try JSON.parse(
            #"{"clientID": "phone", "tab": "inventory", "path": [], "destination": null, "checkpoints": {}, "url": "stockroom://inventory", "version": 0, "updatedAt": null}"#
        )))
        #expect(json["destination"] == .null)
        #expect(json["updatedAt"] == .null)
        #expect(try decode(Navigation.self, json.description) == .unwritten(clientID: "phone"))
    }

    @Test("a written Navigation with an edit open")
    func writtenNavigation() throws {
        let navigation = Navigation(
            clientID: "ipad",
            state: NavigationState(
                tab: .inventory,
                path: [.item(id: Fixture.keyboardID)],
                destination: .edit(itemID: Fixture.keyboardID, baseVersion: 1, draft: Fixture.keyboard.draft)
            ),
            version: 7,
            updatedAt: Fixture.t0
        )
        try expectWireShape(navigation, #"""
            {"clientID": "ipad", "tab": "inventory", "path": [{"item": {"id": "\#(kb)"}}],
             "destination": {"edit": {"itemID": "\#(kb)", "baseVersion": 1, "draft": \#(keyboardDraftJSON)}},
             "checkpoints": {}, "url": "stockroom://inventory/items/\#(kb)/edit",
             "version": 7, "updatedAt": "2026-11-22T06:00:00.123Z"}
            """#)
    }

    @Test("NavigationState (the PUT body) writes destination null")
    func navigationState() throws {
        try expectShape(
            NavigationState(tab: .settings, path: [], destination: nil),
            #"{"tab": "settings", "path": [], "destination": null, "checkpoints": {}}"#
        )
    }

    // MARK: items

    @Test("Item shape, colour null")
    func itemShape() throws {
        try expectWireShape(Fixture.keyboard, #"""
            {"id": "\#(kb)", "name": "Keyboard", "color": null, "status": {"inStock": {"quantity": 3}},
             "version": 1, "createdAt": "2026-11-22T06:00:00.123Z", "updatedAt": "2026-11-22T06:00:00.123Z"}
            """#)
        #expect(try encodedJSON(Fixture.keyboard)["color"] == .null)
    }

    @Test("Item shape with a colour")
    func itemWithColor() throws {
        try expectWireShape(Fixture.mouse, #"""
            {"id": "6f1c2e4a-2222-4000-8000-000000000002", "name": "Mouse",
             "color": {"name": "Graphite", "red": 0.2, "green": 0.2, "blue": 0.25},
             "status": {"outOfStock": {"isOnBackOrder": true}},
             "version": 4, "createdAt": "2026-11-22T06:00:00.123Z", "updatedAt": "2026-11-22T06:00:00.123Z"}
            """#)
    }

    @Test("Draft writes color null")
    func draftNull() throws {
        try expectShape(Fixture.keyboard.draft, keyboardDraftJSON)
        #expect(try encodedJSON(Draft.blank)["color"] == .null)
    }

    // MARK: ItemID

    @Test("ItemID accepts any case and writes lowercase")
    func itemIDCase() throws {
        let upper = try decode(ItemID.self, #""\#(kbUpper)""#)
        #expect(upper == Fixture.keyboardID)
        #expect(upper.description == kb)
        #expect(try encodedJSON(upper) == .string(kb))
        #expect(ItemID(kbUpper) == ItemID(kb))
        #expect(ItemID("6f1C2e4A-1111-4000-8000-000000000001") == Fixture.keyboardID)
        let route = try decode(Route.self, #"{"item": {"id": "\#(kbUpper)"}}"#)
        #expect(try encodedJSON(route) == JSON.parse(#"{"item": {"id": "\#(kb)"}}"#))
        let command = try decode(Command.self, #"{"openEdit": {"itemID": "\#(kbUpper)"}}"#)
        #expect(command == .openEdit(itemID: Fixture.keyboardID))
    }

    @Test("a malformed ItemID does not parse", arguments: [
        "", "keyboard", "6f1c2e4a-1111-4000-8000-00000000000", "6f1c2e4a-1111-4000-8000-0000000000011",
        "6f1c2e4a111140008000000000000001", "6f1c2e4a-1111-4000-8000-00000000000g",
    ])
    func malformedItemID(_ text: String) {
        #expect(ItemID(text) == nil)
        #expect(throws: DecodingError.self) { try decode(ItemID.self, #""\#(text)""#) }
    }

    @Test("an ItemID must be a string")
    func itemIDType() {
        #expect(throws: DecodingError.self) { try decode(ItemID.self, "42") }
        #expect(throws: DecodingError.self) { try decode(ItemID.self, "null") }
    }

    @Test("a ClientID is 1-64 of [A-Za-z0-9._-]; a malformed one does not parse or decode, in a command either", arguments: [
        "", "phone 1", "phone/1", "télé", String(repeating: "a", count: 65), "a\u{0}b",
    ])
    func malformedClientID(_ text: String) throws {
        #expect(ClientID(text) == nil)
        let json = String(decoding: try JSONEncoder().encode(text), as: UTF8.self)
        #expect(throws: DecodingError.self) { try decode(ClientID.self, json) }
        #expect(throws: DecodingError.self) { try decode(Command.self, #"{"restore": {"fromClientID": \#(json)}}"#) }
    }

    @Test("a ClientID round-trips as its text")
    func clientIDRoundTrip() throws {
        let id = try #require(ClientID(String(repeating: "A-z.0_", count: 10) + "abcd"))
        #expect(try decode(ClientID.self, #""\#(id.rawValue)""#) == id)
        #expect(String(decoding: try JSONEncoder().encode(id), as: UTF8.self) == #""\#(id.rawValue)""#)
    }

    @Test("a nullable field reads null and an absent key as nil, and a value as itself")
    func nullableDecoding() throws {
        let absent = try decode(Draft.self, #"{"name": "Mouse", "status": {"outOfStock": {"isOnBackOrder": false}}}"#)
        let null = try decode(Draft.self, #"{"name": "Mouse", "color": null, "status": {"outOfStock": {"isOnBackOrder": false}}}"#)
        #expect(absent.color == nil && null.color == nil && absent == null)
        let red = try decode(Draft.self, #"{"name": "Mouse", "color": {"name": "Red", "red": 1, "green": 0, "blue": 0}, "status": {"outOfStock": {"isOnBackOrder": false}}}"#)
        #expect(red.color == Color(name: "Red", red: 1, green: 0, blue: 0))
        #expect(throws: DecodingError.self) { try decode(Draft.self, #"{"name": "Mouse", "color": 7, "status": {"outOfStock": {"isOnBackOrder": false}}}"#) }
    }

    // MARK: refusals

    @Test("unknown enum cases fail to decode")
    func unknownCases() {
        #expect(throws: DecodingError.self) { try decode(Command.self, #"{"teleport": {}}"#) }
        #expect(throws: DecodingError.self) { try decode(Command.self, #"{"Cancel": {}}"#) }
        #expect(throws: DecodingError.self) { try decode(Command.self, #"{"cancel": {}, "pop": {}}"#) }
        #expect(throws: DecodingError.self) { try decode(Command.self, #"{}"#) }
        #expect(throws: DecodingError.self) { try decode(Command.self, #""cancel""#) }
        #expect(throws: DecodingError.self) { try decode(Command.self, #"{"selectTab": {"tab": "home"}}"#) }
        #expect(throws: DecodingError.self) { try decode(Tab.self, #""home""#) }
        #expect(throws: DecodingError.self) { try decode(Tab.self, #""Inventory""#) }
        #expect(throws: DecodingError.self) { try decode(Role.self, #""owner""#) }
        #expect(throws: DecodingError.self) { try decode(Status.self, #"{"discontinued": {}}"#) }
        #expect(throws: DecodingError.self) { try decode(Destination.self, #"{"sheet": {"itemID": "\#(kb)"}}"#) }
        #expect(throws: DecodingError.self) { try decode(Route.self, #"{"folder": {"id": "\#(kb)"}}"#) }
    }

    @Test("missing payload fields and wrong types fail to decode")
    func missingAndWrongTypes() {
        #expect(throws: DecodingError.self) { try decode(Status.self, #"{"inStock": {}}"#) }
        #expect(throws: DecodingError.self) { try decode(Status.self, #"{"inStock": {"quantity": "3"}}"#) }
        #expect(throws: DecodingError.self) { try decode(Status.self, #"{"inStock": {"quantity": 2.5}}"#) }
        #expect(throws: DecodingError.self) { try decode(Command.self, #"{"openEdit": {}}"#) }
        #expect(throws: DecodingError.self) { try decode(Command.self, #"{"updateDraft": {"draft": {"name": "x"}}}"#) }
        #expect(throws: DecodingError.self) { try decode(Draft.self, #"{"color": null, "status": {"inStock": {"quantity": 1}}}"#) }
        #expect(throws: DecodingError.self) { try decode(Destination.self, #"{"edit": {"itemID": "\#(kb)", "draft": \#(keyboardDraftJSON)}}"#) }
        #expect(throws: DecodingError.self) { try decode(NavigationState.self, #"{"path": [], "destination": null}"#) }
    }

    // MARK: times

    @Test("times are RFC 3339 UTC with milliseconds")
    func timeFormat() throws {
        #expect(Timestamp.format(Fixture.t0) == "2026-11-22T06:00:00.123Z")
        #expect(Timestamp.format(Timestamp.date(milliseconds: 1_795_327_200_000)) == "2026-11-22T06:00:00.000Z")
        #expect(Timestamp.format(Timestamp.date(milliseconds: 0)) == "1970-01-01T00:00:00.000Z")
        #expect(Timestamp.format(Timestamp.date(milliseconds: 951_782_400_007)) == "2000-02-29T00:00:00.007Z")
        // Sub-millisecond precision is cut off, not rounded up.
        #expect(Timestamp.format(Date(timeIntervalSince1970: 1_795_327_200.1239)) == "2026-11-22T06:00:00.123Z")
        #expect(try encodedJSON(Fixture.keyboard)["createdAt"] == .string("2026-11-22T06:00:00.123Z"))
    }

    @Test("times decode with and without fractional seconds")
    func timeDecode() throws {
        let withMillis = try decode(Navigation.self, #"""
            {"clientID": "a", "tab": "inventory", "path": [], "destination": null, "version": 1,
             "updatedAt": "2026-11-22T06:00:00.123Z"}
            """#)
        #expect(withMillis.updatedAt.map(Timestamp.milliseconds) == 1_795_327_200_123)
        #expect(Timestamp.parse("2026-11-22T06:00:00Z").map(Timestamp.milliseconds) == 1_795_327_200_000)
        #expect(Timestamp.parse("2026-11-22T06:00:00.123Z").map(Timestamp.milliseconds) == 1_795_327_200_123)
        #expect(Timestamp.parse("yesterday") == nil)
        #expect(Timestamp.parse("") == nil)
        #expect(throws: DecodingError.self) {
            try decode(Navigation.self, #"""
                {"clientID": "a", "tab": "inventory", "path": [], "destination": null, "version": 1, "updatedAt": "yesterday"}
                """#)
        }
    }

    /// A Swift client decodes with `JSONCoding.decoder()`; the time it reads must be the time on
    /// the wire, so that writing it again yields the same string.
    @Test("a decoded time re-encodes to the same string", arguments: [
        "2026-11-22T06:00:00.000Z", "2026-11-22T06:00:00.001Z", "2026-11-22T06:00:00.002Z",
        "2026-11-22T06:00:00.009Z", "2026-11-22T06:00:00.123Z", "2026-11-22T06:00:00.999Z",
        "2026-11-22T06:00:59.015Z", "2026-11-22T06:00:00.022Z",
    ])
    func timeRoundTrip(_ text: String) throws {
        let navigation = try decode(Navigation.self, #"""
            {"clientID": "a", "tab": "inventory", "path": [], "destination": null, "version": 1, "updatedAt": "\#(text)"}
            """#)
        #expect(try encodedJSON(navigation)["updatedAt"] == .string(text))
    }

    @Test("every millisecond of a second survives format → parse")
    func everyMillisecond() {
        var mismatches: [String] = []
        for ms in Int64(1_795_327_200_000)..<1_795_327_201_000 {
            let text = Timestamp.format(Timestamp.date(milliseconds: ms))
            let back = Timestamp.parse(text).map(Timestamp.milliseconds)
            if back != ms { mismatches.append("\(text) → \(back.map(String.init) ?? "nil")") }
        }
        #expect(mismatches.isEmpty, "\(mismatches.count) of 1000 differ, e.g. \(mismatches.prefix(5))")
    }

    @Test("Timestamp milliseconds round-trip")
    func millisecondsRoundTrip() {
        for ms: Int64 in [0, 1_700_000_000_001, 1_795_327_200_002, 1_795_327_200_123, 1_795_327_200_999] {
            #expect(Timestamp.milliseconds(Timestamp.date(milliseconds: ms)) == ms)
        }
        let now = Timestamp.now()
        #expect(Timestamp.date(milliseconds: Timestamp.milliseconds(now)) == now)
    }

    // MARK: the feed's WebSocket message

    @Test("setFilter: filter null or absent is every item; any other key is refused")
    func feedSocketMessage() throws {
        func decode(_ json: String) throws -> FeedSocketMessage {
            try JSONCoding.decoder().decode(FeedSocketMessage.self, from: Data(json.utf8))
        }
        #expect(try decode(#"{"setFilter":{"filter":"quantity >= 2"}}"#).setFilter.filter == "quantity >= 2")
        #expect(try decode(#"{"setFilter":{"filter":null}}"#).setFilter.filter == nil)
        #expect(try decode(#"{"setFilter":{}}"#).setFilter.filter == nil)
        for (refused, key) in [
            (#"{"setFilter":{"filtr":"quantity >= 2"}}"#, "filtr"), (#"{"setFilter":{"filter":null,"extra":1}}"#, "extra"),
            (#"{"setFilter":{"filter":"x"},"also":{}}"#, "also"), (#"{"setfilter":{"filter":"x"}}"#, "setfilter"),
            (#"{"setFilter":{"\#(String(repeating: "k", count: 100))":1}}"#, String(repeating: "k", count: 64) + "..."),
        ] {
            #expect(throws: UnknownKey(name: key), "\(refused)") { try decode(refused) }
        }
        for refused in [#"{}"#, #"[]"#, #"{"setFilter":"x"}"#] {
            #expect(throws: DecodingError.self, "\(refused)") { try decode(refused) }
        }
        let encoded = try JSONCoding.encoder().encode(FeedSocketMessage(setFilter: .init(filter: nil)))
        #expect(String(decoding: encoded, as: UTF8.self) == #"{"setFilter":{"filter":null}}"#)
    }
}
