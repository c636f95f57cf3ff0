import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import StockroomCore
import StockroomWire
import StockroomStorage
import Testing

/// Text is stored exactly as accepted, and control characters in names, users and ids are refused.
/// Compared as UTF-8 bytes: Swift's `==` on strings treats canonically equivalent text as equal.
@Suite("Exact text")
struct ExactTextTests {
    /// A JSON string literal holding `text`, with every control character escaped.
    static func literal(_ text: String) -> String {
        var json = JSONWriter()
        json.string(text)
        return json.string
    }

    /// An item body whose name (and colour name) are the given JSON string contents, escapes as written.
    static func itemJSON(escapedName: String, escapedColorName: String? = nil) -> String {
        let color = escapedColorName.map { #"{"name":"\#($0)","red":0,"green":0.5,"blue":1}"# } ?? "null"
        return #"{"name":"\#(escapedName)","color":\#(color),"status":{"inStock":{"quantity":1}}}"#
    }

    static func itemJSON(name: String, colorName: String? = nil) -> String {
        func contents(_ text: String) -> String { String(literal(text).dropFirst().dropLast()) }
        return itemJSON(escapedName: contents(name), escapedColorName: colorName.map(contents))
    }

    /// JSON string contents (as a client sends them) holding a control character.
    /// A body is UTF-8 JSON (`charset=utf-8`): one in UTF-16 or UTF-32, with or without a byte order
    /// mark, is `400 invalidJSON` and writes nothing (`JSONDecoder` would read it).
    @Test("a JSON body in UTF-16 or UTF-32 is 400 invalidJSON and changes nothing", arguments: [
        "UTF-16 with BOM", "UTF-16LE", "UTF-16BE", "UTF-32LE",
    ])
    func aBodyThatIsNotUTF8IsRefused(encoding: String) async throws {
        let text = Self.itemJSON(name: "Sixteen")
        let bytes: [UInt8] =
            switch encoding {
            case "UTF-16 with BOM": [0xFF, 0xFE] + Array(text.data(using: .utf16LittleEndian)!)
            case "UTF-16LE": Array(text.data(using: .utf16LittleEndian)!)
            case "UTF-16BE": Array(text.data(using: .utf16BigEndian)!)
            default: Array(text.data(using: .utf32LittleEndian)!)
            }
        try await withTestApp { app in
            try await app.test { client in
                let answer = try await client.execute(
                    uri: "/v1/items", method: .post,
                    headers: [.authorization: "Bearer \(app.editor)", .contentType: "application/json; charset=utf-8"],
                    body: ByteBuffer(bytes: bytes))
                #expect(answer.status == .badRequest, "\(encoding)")
                #expect(answer.errorCode == "invalidJSON")
                let items = try await client.send(.get, "/v1/items", token: app.editor).json["items"] as? [[String: Any]]
                #expect(try #require(items).isEmpty, "nothing was written")
            }
        }
    }

    @Test("a control character in a name, colour name or user is 422 on its field and changes nothing", arguments: [
        #"\u0000/"#, #"alice\u0000x"#, #"a\u0001b"#, #"bell\u0007"#, #"mid\ttab"#, #"mid\nline"#, #"unit\u001fsep"#, #"del\u007f"#,
        "del\u{7F}raw",
    ])
    func controlCharactersAreRefused(escaped text: String) async throws {
        try await withTestApp { app in
            try await app.test { client in
                let name = try await client.send(.post, "/v1/items", token: app.editor, json: Self.itemJSON(escapedName: text))
                #expect(name.status == .unprocessableContent)
                #expect(name.errorCode == "validationFailed")
                #expect(name.errorField == "name")

                let colour = try await client.send(
                    .post, "/v1/items", token: app.editor, json: Self.itemJSON(escapedName: "Lamp", escapedColorName: text))
                #expect(colour.status == .unprocessableContent)
                #expect(colour.errorCode == "validationFailed")
                #expect(colour.errorField == "color.name")

                let user = try await client.send(.post, "/v1/tokens", token: app.admin, json: #"{"user":"\#(text)","role":"viewer"}"#)
                #expect(user.status == .unprocessableContent)
                #expect(user.errorCode == "validationFailed")
                #expect(user.errorField == "user")

                // An existing item's PUT is refused the same way and leaves it as it was.
                let item: Item = try await client.send(.post, "/v1/items", token: app.editor, json: Self.itemJSON(name: "Desk")).decode()
                let put = try await client.send(.put, "/v1/items/\(item.id)", token: app.editor, json: Self.itemJSON(escapedName: text))
                #expect(put.status == .unprocessableContent)
                #expect(put.errorField == "name")
                #expect(try await client.send(.get, "/v1/items/\(item.id)", token: app.editor).decode(Item.self) == item)

                let items = try await client.send(.get, "/v1/items", token: app.editor).json["items"] as? [Any]
                #expect(items?.count == 1, "only Desk was created")
                let tokens = try await client.send(.get, "/v1/tokens", token: app.admin).json["tokens"] as? [Any]
                #expect(tokens?.count == 4, "no token was created")
                let feed = try await client.send(.get, "/v1/changes", token: app.editor).json["changes"] as? [Any]
                #expect(feed?.count == 1, "only Desk's creation is in the feed")
            }
        }
    }

    @Test("a lone surrogate escape is 400 invalidJSON (no string can hold it); a pair is one 4-byte character", arguments: [
        #"\ud800x"#, #"x\udc00"#, #"\ude00\ud83d"#,
    ])
    func surrogateEscapes(escaped text: String) async throws {
        try await withTestApp { app in
            try await app.test { client in
                let lone = try await client.send(.post, "/v1/items", token: app.editor, json: Self.itemJSON(escapedName: text))
                #expect(lone.status == .badRequest)
                #expect(lone.errorCode == "invalidJSON")
                let items = try await client.send(.get, "/v1/items", token: app.editor).json["items"] as? [Any]
                #expect(items?.count == 0)

                let pair = try await client.send(.post, "/v1/items", token: app.editor, json: Self.itemJSON(escapedName: #"\ud83d\ude00"#))
                #expect(pair.status == .created)
                #expect(Array(try pair.decode(Item.self).name.utf8) == Array("\u{1F600}".utf8))
            }
        }
    }

    @Test("an Idempotency-Key with a tab is 400 invalidParameter")
    func idempotencyKeyWithATab() async throws {
        try await withTestApp { app in
            try await app.test { client in
                let response = try await client.send(
                    .post, "/v1/items", token: app.editor, json: Self.itemJSON(name: "Lamp"), headers: [HTTPField.Name("Idempotency-Key")!: "a\tb"])
                #expect(response.status == .badRequest)
                #expect(response.errorCode == "invalidParameter")
                #expect(response.errorField == "Idempotency-Key")
            }
        }
    }

    /// Two `Idempotency-Key` lines: which key a retry would send cannot be told, so neither is
    /// taken, and nothing is written.
    @Test("two Idempotency-Keys are 400 invalidParameter")
    func twoIdempotencyKeys() async throws {
        try await withTestApp { app in
            try await app.test { client in
                var headers = HTTPFields()
                headers.append(HTTPField(name: HTTPField.Name("Idempotency-Key")!, value: "k1"))
                headers.append(HTTPField(name: HTTPField.Name("Idempotency-Key")!, value: "k2"))
                let response = try await client.send(.post, "/v1/items", token: app.editor, json: Self.itemJSON(name: "Lamp"), headers: headers)
                #expect(response.status == .badRequest && response.errorCode == "invalidParameter" && response.errorField == "Idempotency-Key")
                let items = try await client.send(.get, "/v1/items", token: app.editor).json["items"] as? [Any]
                #expect(items?.isEmpty == true)
            }
        }
    }

    /// Header values that are not UTF-8 would read as U+FFFD, so that `k\xFF` and `k\xFE` were one key
    /// and a request could be answered with another's stored response.
    @Test("an Idempotency-Key that is not UTF-8 is 400 invalidParameter, never another key")
    func idempotencyKeyThatIsNotUTF8() async throws {
        try await withTestApp { app in
            try await app.test { client in
                for bytes: [UInt8] in [[0x6B, 0xFF], [0x6B, 0xFE], [0x6B, 0xC0, 0xAF]] {
                    var headers = HTTPFields()
                    headers.append(HTTPField(name: HTTPField.Name("Idempotency-Key")!, value: bytes))
                    let response = try await client.send(.post, "/v1/items", token: app.editor, json: Self.itemJSON(name: "Lamp"), headers: headers)
                    #expect(response.status == .badRequest)
                    #expect(response.errorCode == "invalidParameter")
                    #expect(response.errorField == "Idempotency-Key")
                }
                // Over the wire NIO has already read such bytes as U+FFFD, which is refused for them.
                let replaced: HTTPFields = [HTTPField.Name("Idempotency-Key")!: "k\u{FFFD}"]
                let refused = try await client.send(.post, "/v1/items", token: app.editor, json: Self.itemJSON(name: "Lamp"), headers: replaced)
                #expect(refused.status == .badRequest && refused.errorField == "Idempotency-Key")
                let accepted: HTTPFields = [HTTPField.Name("Idempotency-Key")!: "k-\u{E9}-\u{1F4E6}"]
                let created = try await client.send(.post, "/v1/items", token: app.editor, json: Self.itemJSON(name: "Lamp"), headers: accepted)
                #expect(created.status == .created, "other text than ASCII is a key")
            }
        }
    }

    /// RTL marks and overrides, 4-byte emoji, combining marks that NFC would compose, and the
    /// maximum lengths in 4-byte characters.
    static let acceptedNames: [String] = [
        "\u{200F}מקלדת\u{200E} keyboard \u{202E}reversed\u{202C}",
        "Box \u{1F4E6} \u{1F600}",
        "Cafe\u{301} and Caf\u{E9}",
        "\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}",
        String(repeating: "\u{1F4E6}", count: ValidDraft.maxNameLength),
        String(repeating: "e\u{301}", count: ValidDraft.maxNameLength),
    ]

    @Test("an accepted name is read back byte for byte from the item, the list, the snapshot and the feed", arguments: acceptedNames)
    func acceptedNamesRoundTrip(name: String) async throws {
        let colorName = String(name.prefix(ValidDraft.maxColorNameLength))
        try await withTestApp { app in
            try await app.test { client in
                let created = try await client.send(.post, "/v1/items", token: app.editor, json: Self.itemJSON(name: name, colorName: colorName))
                #expect(created.status == .created)
                let item: Item = try created.decode()
                #expect(Array(item.name.utf8) == Array(name.utf8))
                #expect(Array((item.color?.name ?? "").utf8) == Array(colorName.utf8))

                let fetched: Item = try await client.send(.get, "/v1/items/\(item.id)", token: app.viewer).decode()
                #expect(Array(fetched.name.utf8) == Array(name.utf8))
                #expect(Array((fetched.color?.name ?? "").utf8) == Array(colorName.utf8))

                struct Page: Decodable { let items: [Item] }
                let listed = try await client.send(.get, "/v1/items", token: app.viewer).decode(Page.self).items
                #expect(listed.map { Array($0.name.utf8) } == [Array(name.utf8)])

                let snapshot = try await client.send(.get, "/v1/snapshot", token: app.viewer).decode(Page.self).items
                #expect(snapshot.map { Array($0.name.utf8) } == [Array(name.utf8)])

                let feed = try await client.send(.get, "/v1/changes", token: app.viewer).decode(FeedBatch.self).changes
                #expect(feed.map { Array(($0.item?.name ?? "").utf8) } == [Array(name.utf8)])
            }
        }
    }

    @Test("a user is stored exactly (in NFC) and is another user than one differing in a mark")
    func usersAreExact() async throws {
        try await withTestApp { app in
            try await app.test { client in
                let users = ["alice", "\u{E5}lice", "\u{674E}" + String(repeating: "x", count: UserID.maxCharacters - 1)]
                var secrets: [String] = []
                for user in users {
                    let created = try await client.send(.post, "/v1/tokens", token: app.admin, json: #"{"user":\#(Self.literal(user)),"role":"editor"}"#)
                    #expect(created.status == .created)
                    #expect(Array(((try created.json["user"] as? String) ?? "").utf8) == Array(user.utf8))
                    secrets.append(try #require(try created.json["token"] as? String))
                }
                let listed = try await client.send(.get, "/v1/tokens", token: app.admin).json["tokens"] as? [[String: Any]] ?? []
                let listedUsers = listed.compactMap { $0["user"] as? String }.map { Array($0.utf8) }
                for user in users { #expect(listedUsers.contains(Array(user.utf8))) }

                // alice's device does not exist for "ålice".
                let command = #"{"command":{"selectTab":{"tab":"settings"}}}"#
                #expect(try await client.send(.post, "/v1/clients/phone/commands", token: secrets[0], json: command).status == .ok)
                #expect(try await client.send(.get, "/v1/clients/phone/navigation", token: secrets[1]).status == .notFound)
            }
        }
    }

    @Test("a draft holds any text exactly, a NUL included; saving it is 422 on name and keeps the draft")
    func draftTextIsExact() async throws {
        try await withTestApp { app in
            try await app.test { client in
                let draft = "\u{0}/ \u{1F4E6} \u{200F}"
                let open = #"{"command":{"openAdd":{}}}"#
                #expect(try await client.send(.post, "/v1/clients/phone/commands", token: app.editor, json: open).status == .ok)
                let update = #"{"command":{"updateDraft":{"draft":\#(Self.itemJSON(name: draft))}}}"#
                #expect(try await client.send(.post, "/v1/clients/phone/commands", token: app.editor, json: update).status == .ok)

                let read: Navigation = try await client.send(.get, "/v1/clients/phone/navigation", token: app.editor).decode()
                guard case .add(let stored) = read.state.destination else {
                    Issue.record("the add draft is not open: \(String(describing: read.state.destination))")
                    return
                }
                #expect(Array(stored.name.utf8) == Array(draft.utf8))

                let save = try await client.send(.post, "/v1/clients/phone/commands", token: app.editor, json: #"{"command":{"save":{}}}"#)
                #expect(save.status == .unprocessableContent)
                #expect(save.errorField == "name")
                let after: Navigation = try await client.send(.get, "/v1/clients/phone/navigation", token: app.editor).decode()
                #expect(after == read)
            }
        }
    }

    @Test("the store refuses a token user with a control character whoever calls it")
    func storeRefusesControlCharactersInUsers() async throws {
        try await withTestApp { app in
            await #expect(throws: StoreError.self) { try await app.database.createToken(user: UserID(stored: "alice\u{0}x"), role: .editor) }
            let tokens = try await app.database.listTokens()
            #expect(tokens.count == 4)
        }
    }
}
