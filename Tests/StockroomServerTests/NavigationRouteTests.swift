import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import StockroomCore
import StockroomWire
import Testing

/// The body of a command response.
struct CommandReply: Decodable, Equatable {
    let navigation: Navigation
    let item: Item?
    let cursor: String
}

extension TestClientProtocol {
    /// Sends one command for `clientID`.
    @discardableResult
    func command(_ json: String, clientID: String, token: String, idempotencyKey: String? = nil) async throws -> TestResponse {
        var headers: HTTPFields = [:]
        if let idempotencyKey { headers[HTTPField.Name("Idempotency-Key")!] = idempotencyKey }
        return try await send(.post, "/v1/clients/\(clientID)/commands", token: token, json: #"{"command":\#(json)}"#, headers: headers)
    }

    /// Creates an item and returns it.
    func createItem(_ name: String, quantity: Int = 100, token: String) async throws -> Item {
        try await send(.post, "/v1/items", token: token, json: draftJSON(name: name, quantity: quantity)).decode()
    }
}

@Suite("Navigation and commands over HTTP")
struct NavigationRouteTests {
    @Test func aNeverWrittenClientReadsAsRootAndIsNotCreatedByReading() async throws {
        try await withTestApp { app in
            try await app.test { client in
                let response = try await client.send(.get, "/v1/clients/phone/navigation", token: app.editor)
                #expect(response.status == .ok)
                #expect(response.headers[.eTag] == "\"0\"")
                #expect(try response.decode(Navigation.self) == .unwritten(clientID: "phone"))
                let json = try response.json
                #expect(json["destination"] is NSNull && json["updatedAt"] is NSNull)
                let mine = try await client.send(.get, "/v1/users/me/navigation", token: app.editor).json
                #expect((mine["clients"] as? [Any])?.isEmpty == true)
                // Still free: another user can claim it.
                let other = try await client.send(.put, "/v1/clients/phone/navigation", token: app.otherEditor, json: #"{"tab":"settings","path":[],"destination":null}"#)
                #expect(other.status == .ok)
            }
        }
    }

    /// The episode: edit the Keyboard, type, cancel (unchanged); edit again, type, save (changed).
    /// Mid-draft, a second device restores from the first and sees the same draft.
    @Test func theKeyboardEpisode() async throws {
        try await withTestApp { app in
            try await app.test { client in
                let keyboard = try await client.createItem("Keyboard", token: app.editor)
                let typed = Draft(name: "Bluetooth Keyboard", color: nil, status: .inStock(quantity: 1000))
                let typedJSON = #"{"updateDraft":{"draft":{"name":"Bluetooth Keyboard","color":null,"status":{"inStock":{"quantity":1000}}}}}"#

                let opened: CommandReply = try await client.command(#"{"openEdit":{"itemID":"\#(keyboard.id)"}}"#, clientID: "phone", token: app.editor).decode()
                #expect(opened.navigation.state.destination == .edit(itemID: keyboard.id, baseVersion: 1, draft: keyboard.draft))
                #expect(opened.item == nil)

                let updated: CommandReply = try await client.command(typedJSON, clientID: "phone", token: app.editor).decode()
                #expect(updated.navigation.state.destination == .edit(itemID: keyboard.id, baseVersion: 1, draft: typed))
                #expect(try await client.send(.get, "/v1/items/\(keyboard.id)", token: app.editor).decode(Item.self) == keyboard)

                let cancelled = try await client.command(#"{"cancel":{}}"#, clientID: "phone", token: app.editor)
                #expect(try cancelled.decode(CommandReply.self).navigation.state.destination == nil)
                #expect(try await client.send(.get, "/v1/items/\(keyboard.id)", token: app.editor).decode(Item.self) == keyboard)

                try await client.command(#"{"openEdit":{"itemID":"\#(keyboard.id)"}}"#, clientID: "phone", token: app.editor)
                try await client.command(typedJSON, clientID: "phone", token: app.editor)

                // Handoff mid-draft: the tablet continues exactly where the phone is.
                let restored: CommandReply = try await client.command(#"{"restore":{"fromClientID":"phone"}}"#, clientID: "tablet", token: app.editor).decode()
                let phone: Navigation = try await client.send(.get, "/v1/clients/phone/navigation", token: app.editor).decode()
                #expect(restored.navigation.state == phone.state)
                #expect(restored.navigation.state.destination == .edit(itemID: keyboard.id, baseVersion: 1, draft: typed))

                let saved = try await client.command(#"{"save":{}}"#, clientID: "phone", token: app.editor)
                #expect(saved.status == .ok)
                let reply: CommandReply = try saved.decode()
                #expect(reply.navigation.state.destination == nil)
                let expected = Item(id: keyboard.id, name: "Bluetooth Keyboard", color: nil, status: .inStock(quantity: 1000), version: 2,
                                    createdAt: keyboard.createdAt, updatedAt: try #require(reply.item?.updatedAt))
                #expect(reply.item == expected)
                #expect(try await client.send(.get, "/v1/items/\(keyboard.id)", token: app.editor).decode(Item.self) == expected)

                // The tablet's copy of the draft is now stale: its save is a conflict carrying the current item.
                let stale = try await client.command(#"{"save":{}}"#, clientID: "tablet", token: app.editor)
                #expect(stale.status == .conflict)
                #expect(stale.errorCode == "conflict")
                let current = try JSONSerialization.data(withJSONObject: try #require((try stale.json["error"] as? [String: Any])?["current"]))
                #expect(try JSONCoding.decoder().decode(Item.self, from: current) == expected)
                let tablet: Navigation = try await client.send(.get, "/v1/clients/tablet/navigation", token: app.editor).decode()
                #expect(tablet.state.destination == .edit(itemID: keyboard.id, baseVersion: 1, draft: typed), "the draft stays open")

                let mine = try await client.send(.get, "/v1/users/me/navigation", token: app.editor).json
                let order = (mine["clients"] as? [[String: Any]] ?? []).compactMap { $0["clientID"] as? String }
                #expect(order == ["phone", "tablet"])
            }
        }
    }

    @Test func commandsThatChangeNothingKeepTheVersion() async throws {
        try await withTestApp { app in
            try await app.test { client in
                let first: CommandReply = try await client.command(#"{"selectTab":{"tab":"settings"}}"#, clientID: "phone", token: app.viewer).decode()
                #expect(first.navigation.version == 1)
                for json in [#"{"cancel":{}}"#, #"{"popToRoot":{}}"#] {
                    let reply: CommandReply = try await client.command(json, clientID: "phone", token: app.viewer).decode()
                    #expect(reply.navigation == first.navigation)
                    #expect(reply.cursor == first.cursor)
                }
            }
        }
    }

    @Test(arguments: [#"{"save":{}}"#, #"{"confirmDelete":{}}"#, #"{"pop":{}}"#, #"{"updateDraft":{"draft":{"name":"x","color":null,"status":{"inStock":{"quantity":1}}}}}"#])
    func commandsThatDoNotFitAreInvalidTransition(json: String) async throws {
        try await withTestApp { app in
            try await app.test { client in
                let response = try await client.command(json, clientID: "phone", token: app.editor)
                #expect(response.status == .conflict)
                #expect(response.errorCode == "invalidTransition")
                let navigation: Navigation = try await client.send(.get, "/v1/clients/phone/navigation", token: app.editor).decode()
                #expect(navigation == .unwritten(clientID: "phone"))
            }
        }
    }

    @Test func openingOrPushingAMissingItemIs404() async throws {
        try await withTestApp { app in
            try await app.test { client in
                let id = UUID().uuidString
                for json in [#"{"openEdit":{"itemID":"\#(id)"}}"#, #"{"push":{"route":{"item":{"id":"\#(id)"}}}}"#] {
                    let response = try await client.command(json, clientID: "phone", token: app.editor)
                    #expect(response.status == .notFound)
                    #expect(response.errorCode == "notFound")
                }
            }
        }
    }

    @Test func aViewerDrivesNavigationButMayNotSaveOrConfirmDelete() async throws {
        try await withTestApp { app in
            try await app.test { client in
                let item = try await client.createItem("Mug", token: app.editor)
                #expect(try await client.command(#"{"openEdit":{"itemID":"\#(item.id)"}}"#, clientID: "v1", token: app.viewer).status == .ok)
                let save = try await client.command(#"{"save":{}}"#, clientID: "v1", token: app.viewer)
                #expect(save.status == .forbidden)
                #expect(try await client.command(#"{"openDeleteAlert":{"itemID":"\#(item.id)"}}"#, clientID: "v1", token: app.viewer).status == .ok)
                let delete = try await client.command(#"{"confirmDelete":{}}"#, clientID: "v1", token: app.viewer)
                #expect(delete.status == .forbidden)
                #expect(try await client.send(.get, "/v1/items/\(item.id)", token: app.viewer).decode(Item.self) == item)
            }
        }
    }

    @Test func anInvalidDraftOnSaveIs422AndStaysOpen() async throws {
        try await withTestApp { app in
            try await app.test { client in
                try await client.command(#"{"openAdd":{}}"#, clientID: "phone", token: app.editor)
                let save = try await client.command(#"{"save":{}}"#, clientID: "phone", token: app.editor)
                #expect(save.status == .unprocessableContent)
                #expect(save.errorCode == "validationFailed")
                #expect(save.errorField == "name")
                let navigation: Navigation = try await client.send(.get, "/v1/clients/phone/navigation", token: app.editor).decode()
                #expect(navigation.state.destination == .add(draft: .blank))
                let list = try await client.send(.get, "/v1/items", token: app.editor).json
                #expect((list["items"] as? [Any])?.isEmpty == true)
            }
        }
    }

    @Test func anotherUsersClientDoesNotExist() async throws {
        try await withTestApp { app in
            try await app.test { client in
                try await client.command(#"{"selectTab":{"tab":"settings"}}"#, clientID: "phone", token: app.editor)
                let get = try await client.send(.get, "/v1/clients/phone/navigation", token: app.otherEditor)
                let put = try await client.send(.put, "/v1/clients/phone/navigation", token: app.otherEditor, json: #"{"tab":"inventory","path":[],"destination":null}"#)
                let command = try await client.command(#"{"cancel":{}}"#, clientID: "phone", token: app.otherEditor)
                let restore = try await client.command(#"{"restore":{"fromClientID":"phone"}}"#, clientID: "theirs", token: app.otherEditor)
                #expect([get.status, put.status, command.status, restore.status] == [.notFound, .notFound, .notFound, .notFound])
            }
        }
    }

    @Test(arguments: ["has space", String(repeating: "a", count: 65), "sl%2Fash", "%C3%A9"])
    func aMalformedClientIDIs400(clientID: String) async throws {
        try await withTestApp { app in
            try await app.test { client in
                let response = try await client.send(.get, "/v1/clients/\(clientID.replacingOccurrences(of: " ", with: "%20"))/navigation", token: app.editor)
                #expect(response.status == .badRequest)
                #expect(response.errorCode == "invalidParameter")
            }
        }
    }

    @Test func deepLinkReplacesTheStateAndChecksItsItems() async throws {
        try await withTestApp { app in
            try await app.test { client in
                let item = try await client.createItem("Mug", token: app.editor)
                let body = #"{"clientID":"phone","tab":"inventory","path":[{"item":{"id":"\#(item.id)"}}],"destination":{"deleteAlert":{"itemID":"\#(item.id)"}}}"#
                let put = try await client.send(.put, "/v1/clients/phone/navigation", token: app.editor, json: body)
                #expect(put.status == .ok)
                #expect(put.headers[.eTag] == "\"1\"")
                let navigation: Navigation = try put.decode()
                #expect(navigation.state == NavigationState(tab: .inventory, path: [.item(id: item.id)], destination: .deleteAlert(for: item)))

                let stale = try await client.send(.put, "/v1/clients/phone/navigation", token: app.editor, json: body, headers: [.ifMatch: "\"0\""])
                #expect(stale.status == .preconditionFailed)
                let missing = #"{"tab":"inventory","path":[{"item":{"id":"\#(UUID())"}}],"destination":null}"#
                let unknown = try await client.send(.put, "/v1/clients/phone/navigation", token: app.editor, json: missing)
                #expect(unknown.status == .unprocessableContent)
                #expect(unknown.errorField == "path")
                let mismatch = try await client.send(.put, "/v1/clients/phone/navigation", token: app.editor, json: #"{"clientID":"other","tab":"inventory","path":[],"destination":null}"#)
                #expect(mismatch.status == .unprocessableContent)
                #expect(mismatch.errorField == "clientID")
                let after: Navigation = try await client.send(.get, "/v1/clients/phone/navigation", token: app.editor).decode()
                #expect(after == navigation)
            }
        }
    }

    @Test func deletingAnItemRepairsEveryDevicePointingAtIt() async throws {
        try await withTestApp { app in
            try await app.test { client in
                let item = try await client.createItem("Mug", token: app.editor)
                let other = try await client.createItem("Cup", token: app.editor)
                try await client.command(#"{"push":{"route":{"item":{"id":"\#(other.id)"}}}}"#, clientID: "a", token: app.editor)
                try await client.command(#"{"push":{"route":{"item":{"id":"\#(item.id)"}}}}"#, clientID: "a", token: app.editor)
                try await client.command(#"{"openDeleteAlert":{"itemID":"\#(item.id)"}}"#, clientID: "b", token: app.editor)
                try await client.command(#"{"openEdit":{"itemID":"\#(item.id)"}}"#, clientID: "c", token: app.otherEditor)
                try await client.command(#"{"updateDraft":{"draft":{"name":"Typed","color":null,"status":{"inStock":{"quantity":3}}}}}"#, clientID: "c", token: app.otherEditor)

                #expect(try await client.send(.delete, "/v1/items/\(item.id)", token: app.editor).status == .noContent)

                let a: Navigation = try await client.send(.get, "/v1/clients/a/navigation", token: app.editor).decode()
                #expect(a.state.path == [.item(id: other.id)])
                #expect(a.version == 3)
                let b: Navigation = try await client.send(.get, "/v1/clients/b/navigation", token: app.editor).decode()
                #expect(b.state.destination == nil)
                #expect(b.version == 2)
                let c: Navigation = try await client.send(.get, "/v1/clients/c/navigation", token: app.otherEditor).decode()
                #expect(c.state.destination == .edit(itemID: item.id, baseVersion: 1, draft: Draft(name: "Typed", color: nil, status: .inStock(quantity: 3))))
                #expect(c.version == 2, "an open edit is not repaired away")

                let save = try await client.command(#"{"save":{}}"#, clientID: "c", token: app.otherEditor)
                #expect(save.status == .conflict)
                #expect(save.errorCode == "itemDeleted")
            }
        }
    }

    @Test func confirmDeleteDeletesTheItemAndClosesTheAlert() async throws {
        try await withTestApp { app in
            try await app.test { client in
                let item = try await client.createItem("Mug", token: app.editor)
                try await client.command(#"{"push":{"route":{"item":{"id":"\#(item.id)"}}}}"#, clientID: "phone", token: app.editor)
                try await client.command(#"{"openDeleteAlert":{"itemID":"\#(item.id)"}}"#, clientID: "phone", token: app.editor)
                let reply: CommandReply = try await client.command(#"{"confirmDelete":{}}"#, clientID: "phone", token: app.editor).decode()
                #expect(reply.item == nil)
                #expect(reply.navigation.state == NavigationState(tab: .inventory, path: [], destination: nil))
                #expect(try await client.send(.get, "/v1/items/\(item.id)", token: app.editor).status == .notFound)
            }
        }
    }

    @Test func idempotentCommandRetryReturnsTheStoredResponseAndAppliesNothing() async throws {
        try await withTestApp { app in
            try await app.test { client in
                try await client.command(#"{"openAdd":{}}"#, clientID: "phone", token: app.editor)
                try await client.command(#"{"updateDraft":{"draft":{"name":"Lamp","color":null,"status":{"inStock":{"quantity":2}}}}}"#, clientID: "phone", token: app.editor)
                let first = try await client.command(#"{"save":{}}"#, clientID: "phone", token: app.editor, idempotencyKey: "save-1")
                let retry = try await client.command(#"{ "save" : { } }"#, clientID: "phone", token: app.editor, idempotencyKey: "save-1")
                #expect(first.status == .ok)
                #expect(retry.status == .ok)
                #expect(try retry.decode(CommandReply.self) == first.decode(CommandReply.self))
                #expect(retry.headers[HTTPField.Name("Idempotency-Replayed")!] == "true")
                // A body that starts with a byte order mark, which the server reads past, is compared as JSON too.
                let marked = try await client.send(
                    .post, "/v1/clients/phone/commands", token: app.editor, json: "\u{FEFF}" + #"{ "command": { "save": {} } }"#,
                    headers: [HTTPField.Name("Idempotency-Key")!: "save-1"])
                #expect(marked.status == .ok && marked.headers[HTTPField.Name("Idempotency-Replayed")!] == "true")
                let list = try await client.send(.get, "/v1/items", token: app.editor).json
                #expect((list["items"] as? [Any])?.count == 1, "the retry inserted nothing")

                let reused = try await client.command(#"{"cancel":{}}"#, clientID: "phone", token: app.editor, idempotencyKey: "save-1")
                #expect(reused.status == .unprocessableContent)
                #expect(reused.errorCode == "idempotencyKeyReused")
                // Scoped per client: the same key on another device is a new request.
                let elsewhere = try await client.command(#"{"cancel":{}}"#, clientID: "tablet", token: app.editor, idempotencyKey: "save-1")
                #expect(elsewhere.status == .ok)
            }
        }
    }

    @Test func aDecidedFailureIsReplayedToo() async throws {
        try await withTestApp { app in
            try await app.test { client in
                let first = try await client.command(#"{"pop":{}}"#, clientID: "phone", token: app.editor, idempotencyKey: "k")
                #expect(first.status == .conflict)
                try await client.command(#"{"selectTab":{"tab":"settings"}}"#, clientID: "phone", token: app.editor)
                let retry = try await client.command(#"{"pop":{}}"#, clientID: "phone", token: app.editor, idempotencyKey: "k")
                #expect(retry.status == .conflict)
                #expect(retry.errorCode == "invalidTransition")
                #expect(retry.headers[HTTPField.Name("Idempotency-Replayed")!] == "true")
            }
        }
    }

    /// A stored `409 conflict` (with the current item) is replayed byte for byte as it was first
    /// answered, its keys in the contract's order: the body is written, not left to `JSONEncoder`,
    /// whose key order changes from one process (or one encoding) to the next.
    @Test func aConflictIsReplayedByteForByteInTheContractsKeyOrder() async throws {
        try await withTestApp { app in
            try await app.test { client in
                let item = try await client.createItem("Contested", token: app.editor)
                try await client.command(#"{"openEdit":{"itemID":"\#(item.id)"}}"#, clientID: "phone", token: app.editor)
                try await client.send(.put, "/v1/items/\(item.id)", token: app.editor, json: draftJSON(name: "Moved on"))
                let first = try await client.command(#"{"save":{}}"#, clientID: "phone", token: app.editor, idempotencyKey: "save-1")
                #expect(first.status == .conflict)
                let body = String(buffer: first.body)
                #expect(body.hasPrefix(#"{"error":{"code":"conflict","message":""#), "\(body)")
                #expect(body.contains(#","field":null,"current":{"id":"\#(item.id)","name":"Moved on","#), "\(body)")
                let retry = try await client.command(#"{"save":{}}"#, clientID: "phone", token: app.editor, idempotencyKey: "save-1")
                #expect(retry.headers[HTTPField.Name("Idempotency-Replayed")!] == "true")
                #expect(String(buffer: retry.body) == body)
            }
        }
    }

    @Test func idempotentItemWritesReplay() async throws {
        try await withTestApp { app in
            try await app.test { client in
                let key: HTTPFields = [HTTPField.Name("Idempotency-Key")!: "create-1"]
                let first = try await client.send(.post, "/v1/items", token: app.editor, json: draftJSON(name: "Hat"), headers: key)
                let retry = try await client.send(.post, "/v1/items", token: app.editor, json: draftJSON(name: "Hat"), headers: key)
                #expect(first.status == .created && retry.status == .created)
                #expect(try retry.decode(Item.self) == first.decode(Item.self))
                #expect(retry.headers[.location] == first.headers[.location])
                // The same key of another user is theirs alone.
                let theirs = try await client.send(.post, "/v1/items", token: app.otherEditor, json: draftJSON(name: "Hat"), headers: key)
                #expect(try theirs.decode(Item.self).id != first.decode(Item.self).id)
                let tooLong: HTTPFields = [HTTPField.Name("Idempotency-Key")!: String(repeating: "k", count: 256)]
                let refused = try await client.send(.post, "/v1/items", token: app.editor, json: draftJSON(name: "Hat"), headers: tooLong)
                #expect(refused.status == .badRequest)
                #expect(refused.errorCode == "invalidParameter")
                let list = try await client.send(.get, "/v1/items", token: app.editor).json
                #expect((list["items"] as? [Any])?.count == 2)
            }
        }
    }
}

@Suite("No lost update, over real HTTP")
struct ConcurrentSaveTests {
    /// Twelve devices hold a draft of the same item at the same base version and save at once:
    /// exactly one wins, every other gets 409 conflict, and the version grows by one.
    @Test func concurrentSavesOfOneItemLetExactlyOneWin() async throws {
        try await withTestApp { app in
            try await app.live { client in
                let item = try await client.createItem("Contested", token: app.editor)
                let devices = (0..<12).map { "device-\($0)" }
                for device in devices {
                    try await client.command(#"{"openEdit":{"itemID":"\#(item.id)"}}"#, clientID: device, token: app.editor)
                    try await client.command(#"{"updateDraft":{"draft":{"name":"By \#(device)","color":null,"status":{"inStock":{"quantity":5}}}}}"#, clientID: device, token: app.editor)
                }
                let statuses = try await withThrowingTaskGroup(of: (String, HTTPResponse.Status, String?).self) { group in
                    for device in devices {
                        group.addTask {
                            let response = try await client.command(#"{"save":{}}"#, clientID: device, token: app.editor)
                            return (device, response.status, response.errorCode)
                        }
                    }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                let winners = statuses.filter { $0.1 == .ok }
                #expect(winners.count == 1)
                #expect(statuses.filter { $0.1 == .conflict && $0.2 == "conflict" }.count == devices.count - 1)
                let final: Item = try await client.send(.get, "/v1/items/\(item.id)", token: app.editor).decode()
                #expect(final.version == 2)
                #expect(final.name == "By \(try #require(winners.first?.0))")
            }
        }
    }
}
