import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import StockroomCore
import Testing

/// Alerts, conflicts, checkpoints and deep links over HTTP: each refusal's status, code and field,
/// and that a refused command changes nothing.
@Suite("Alerts, conflicts, checkpoints, deep links over HTTP")
struct NavigationAdditionsRouteTests {
    /// The device's navigation, to check that a refusal left it as it was.
    static func navigation(_ client: some TestClientProtocol, _ app: TestApp, _ clientID: String = "phone") async throws -> Navigation {
        try await client.send(.get, "/v1/clients/\(clientID)/navigation", token: app.editor).decode()
    }

    struct Refusal: Sendable, CustomTestStringConvertible {
        let testDescription: String
        /// Commands that set the scene; `ITEM` stands for an item's id.
        let setup: [String]
        let command: String
        let status: HTTPResponse.Status
        let code: String
        var field: String? = nil
        var viewer = false
    }

    static let refusals: [Refusal] = [
        Refusal(
            testDescription: "a command that is not one of the open alert's buttons",
            setup: [#"{"openDeleteAlert":{"itemID":"ITEM"}}"#], command: #"{"pop":{}}"#, status: .conflict, code: "invalidTransition"),
        Refusal(
            testDescription: "save while the delete alert is open",
            setup: [#"{"openDeleteAlert":{"itemID":"ITEM"}}"#], command: #"{"save":{"onConflict":"alert"}}"#, status: .conflict,
            code: "invalidTransition"),
        Refusal(
            testDescription: "resolveConflict with no conflict open",
            setup: [#"{"openEdit":{"itemID":"ITEM"}}"#], command: #"{"resolveConflict":{"keep":"mine"}}"#, status: .conflict,
            code: "invalidTransition"),
        Refusal(
            testDescription: "resolveConflict with an unknown choice",
            setup: [], command: #"{"resolveConflict":{"keep":"both"}}"#, status: .badRequest, code: "invalidJSON"),
        Refusal(
            testDescription: "save with an unknown onConflict",
            setup: [#"{"openEdit":{"itemID":"ITEM"}}"#], command: #"{"save":{"onConflict":"merge"}}"#, status: .badRequest,
            code: "invalidJSON"),
        Refusal(
            testDescription: "returnToCheckpoint with an unknown name",
            setup: [#"{"setCheckpoint":{"name":"home"}}"#], command: #"{"returnToCheckpoint":{"name":"list","value":1}}"#,
            status: .conflict, code: "invalidTransition"),
        Refusal(
            testDescription: "setCheckpoint with an empty name",
            setup: [], command: #"{"setCheckpoint":{"name":""}}"#, status: .unprocessableContent, code: "validationFailed", field: "name"),
        Refusal(
            testDescription: "setCheckpoint with a control character in the name",
            setup: [], command: #"{"setCheckpoint":{"name":"a\u0007"}}"#, status: .unprocessableContent, code: "validationFailed",
            field: "name"),
        Refusal(
            testDescription: "returnToCheckpoint with a value larger than a draft's name",
            setup: [#"{"setCheckpoint":{"name":"home"}}"#],
            command: #"{"returnToCheckpoint":{"name":"home","value":"\#(String(repeating: "x", count: 9000))"}}"#,
            status: .unprocessableContent, code: "validationFailed", field: "value"),
        Refusal(
            testDescription: "openURL with another scheme",
            setup: [], command: #"{"openURL":{"url":"https://example.com/inventory"}}"#, status: .unprocessableContent,
            code: "validationFailed", field: "url"),
        Refusal(
            testDescription: "openURL with an unknown segment",
            setup: [], command: #"{"openURL":{"url":"stockroom://inventory/items/ITEM/rename"}}"#, status: .unprocessableContent,
            code: "validationFailed", field: "url"),
        Refusal(
            testDescription: "openURL with a malformed id",
            setup: [], command: #"{"openURL":{"url":"stockroom://inventory/items/42"}}"#, status: .unprocessableContent,
            code: "validationFailed", field: "url"),
        Refusal(
            testDescription: "openURL with an unknown tab",
            setup: [], command: #"{"openURL":{"url":"stockroom://orders"}}"#, status: .unprocessableContent, code: "validationFailed",
            field: "url"),
        Refusal(
            testDescription: "openURL of an item that does not exist",
            setup: [], command: #"{"openURL":{"url":"stockroom://inventory/items/6f1c2e4a-3333-4000-8000-000000000003"}}"#,
            status: .notFound, code: "notFound"),
        Refusal(
            testDescription: "openURL of an edit by a viewer",
            setup: [], command: #"{"openURL":{"url":"stockroom://inventory/items/ITEM/edit"}}"#, status: .forbidden, code: "forbidden",
            viewer: true),
    ]

    @Test(arguments: refusals)
    func eachRefusalChangesNothing(_ refusal: Refusal) async throws {
        try await withTestApp { app in
            try await app.test { client in
                let item = try await client.createItem("Mug", token: app.editor)
                let token = refusal.viewer ? app.viewer : app.editor
                for json in refusal.setup {
                    let response = try await client.command(json.replacingOccurrences(of: "ITEM", with: item.id.description), clientID: "phone", token: token)
                    #expect(response.status == .ok)
                }
                let before: Navigation = try await client.send(.get, "/v1/clients/phone/navigation", token: token).decode()
                let response = try await client.command(
                    refusal.command.replacingOccurrences(of: "ITEM", with: item.id.description), clientID: "phone", token: token)
                #expect(response.status == refusal.status)
                #expect(response.errorCode == refusal.code)
                if let field = refusal.field { #expect(response.errorField == field) }
                let after: Navigation = try await client.send(.get, "/v1/clients/phone/navigation", token: token).decode()
                #expect(after == before)
                #expect(try await client.send(.get, "/v1/items/\(item.id)", token: token).decode(Item.self) == item)
            }
        }
    }

    /// A whole state's bad checkpoint is named as the state's `checkpoints`, as its other checks
    /// are (a command's bad name is its `name`); nothing is written.
    @Test func aReplacedStateWithABadCheckpointNameNamesCheckpoints() async throws {
        try await withTestApp { app in
            try await app.test { client in
                for name in ["", String(repeating: "n", count: 65), #"a\u0007"#] {
                    let body = #"{"tab":"inventory","path":[],"destination":null,"checkpoints":{"\#(name)":{"depth":0,"value":null}}}"#
                    let response = try await client.send(.put, "/v1/clients/phone/navigation", token: app.editor, json: body)
                    #expect(response.status == .unprocessableContent, "\(body)")
                    #expect(response.errorField == "checkpoints", "\(body)")
                }
                let navigation: Navigation = try await client.send(.get, "/v1/clients/phone/navigation", token: app.editor).decode()
                #expect(navigation.version == 0)
            }
        }
    }

    /// The message of a malformed link names the part that is wrong.
    @Test func aMalformedLinkNamesTheSegment() async throws {
        try await withTestApp { app in
            try await app.test { client in
                let response = try await client.command(#"{"openURL":{"url":"stockroom://inventory/items"}}"#, clientID: "phone", token: app.editor)
                #expect(response.status == .unprocessableContent)
                let message = (try response.json["error"] as? [String: Any])?["message"] as? String
                #expect(message?.contains("after /items") == true)
                // A viewer's link to an edit is refused for what it opens: the link itself writes nothing.
                let item = try await client.createItem("Mug", token: app.editor)
                let viewer = try await client.command(#"{"openURL":{"url":"stockroom://inventory/items/\#(item.id)/edit"}}"#, clientID: "phone", token: app.viewer)
                #expect(viewer.status == .forbidden)
                let refusal = (try viewer.json["error"] as? [String: Any])?["message"] as? String
                #expect(refusal == "role viewer may not openURL: it opens a screen that writes an item (editors and admins only)")
            }
        }
    }

    /// Every answer carries the state's canonical URL, checkpoints and the rendered alert.
    @Test func theAnswerCarriesTheURLCheckpointsAndTheRenderedAlert() async throws {
        try await withTestApp { app in
            try await app.test { client in
                let item = try await client.createItem("Mug", token: app.editor)
                try await client.command(#"{"push":{"route":{"item":{"id":"\#(item.id)"}}}}"#, clientID: "phone", token: app.editor)
                try await client.command(#"{"setCheckpoint":{"name":"detail"}}"#, clientID: "phone", token: app.editor)
                let response = try await client.command(#"{"openDeleteAlert":{"itemID":"\#(item.id)"}}"#, clientID: "phone", token: app.editor)
                #expect(response.status == .ok)
                let navigation = try #require(try response.json["navigation"] as? [String: Any])
                #expect(navigation["url"] as? String == "stockroom://inventory/items/\(item.id)/delete")
                let checkpoints = try #require(navigation["checkpoints"] as? [String: Any])
                #expect((checkpoints["detail"] as? [String: Any])?["depth"] as? Int == 1)
                let alert = try #require(
                    ((navigation["destination"] as? [String: Any])?["deleteAlert"] as? [String: Any])?["alert"] as? [String: Any])
                #expect((alert["title"] as? [String: Any])?["text"] as? String == "Delete \u{201C}Mug\u{201D}?")
                let buttons = try #require(alert["buttons"] as? [[String: Any]])
                #expect(buttons.map { $0["role"] as? String } == ["destructive", "cancel"])

                // The button's command, sent as it is, deletes.
                let confirm = try JSONSerialization.data(withJSONObject: buttons[0]["command"]!)
                let deleted = try await client.command(String(decoding: confirm, as: UTF8.self), clientID: "phone", token: app.editor)
                #expect(deleted.status == .ok)
                #expect(try await client.send(.get, "/v1/items/\(item.id)", token: app.editor).status == .notFound)
            }
        }
    }

    /// A stale save asking for the alert answers 200 with the conflict, and the plain 409 stays for
    /// clients that do not.
    @Test func aStaleSaveOpensTheConflictAlertOrAnswers409() async throws {
        try await withTestApp { app in
            try await app.test { client in
                let item = try await client.createItem("Mug", token: app.editor)
                for device in ["phone", "tablet"] {
                    try await client.command(#"{"openEdit":{"itemID":"\#(item.id)"}}"#, clientID: device, token: app.editor)
                }
                try await client.send(.put, "/v1/items/\(item.id)", token: app.editor, json: draftJSON(name: "Moved on"))
                let plain = try await client.command(#"{"save":{}}"#, clientID: "phone", token: app.editor)
                #expect(plain.status == .conflict && plain.errorCode == "conflict")
                let alerted = try await client.command(#"{"save":{"onConflict":"alert"}}"#, clientID: "tablet", token: app.editor)
                #expect(alerted.status == .ok)
                let reply: CommandReply = try alerted.decode()
                guard case .conflict(let id, 1, _, let current?, _) = reply.navigation.state.destination else {
                    Issue.record("no conflict: \(String(describing: reply.navigation.state.destination))")
                    return
                }
                #expect(id == item.id && current.name == "Moved on" && current.version == 2)
                #expect(reply.item == nil)
                #expect(reply.navigation.state.url == "stockroom://inventory/edit/\(item.id)")
            }
        }
    }

    /// Every feed route checks `clientID=` before it resolves the cursor: a malformed device is
    /// `400` on `clientID` even beside a cursor of another epoch, which alone would be `410` (on
    /// the WebSocket route, once the request asks to upgrade: `WebSocketCloseCodeTests`).
    @Test(arguments: ["/v1/changes", "/v1/changes/stream", "/v1/changes/ws"])
    func aMalformedDeviceIsRefusedBeforeTheCursor(route: String) async throws {
        let otherEpoch = "c1.0123456789abcdef0123456789abcdef.5"
        try await withTestApp { app in
            try await app.test { client in
                if route.hasSuffix("/ws") {
                    // Without upgrade headers (this in-process client sends none) the WebSocket
                    // route answers its own shape first: 426, whatever the parameters.
                    for query in ["since=\(otherEpoch)", "since=\(otherEpoch)&clientID=no%20spaces"] {
                        #expect(try await client.send(.get, "\(route)?\(query)", token: app.editor).status == .upgradeRequired)
                    }
                    return
                }
                let stale = try await client.send(.get, "\(route)?since=\(otherEpoch)", token: app.editor)
                #expect(stale.status == .gone)
                let bad = try await client.send(.get, "\(route)?since=\(otherEpoch)&clientID=no%20spaces", token: app.editor)
                #expect(bad.status == .badRequest && bad.errorField == "clientID", "\(bad.status) \(bad.errorField ?? "-")")
                let header = try await client.send(
                    .get, "\(route)?clientID=no%20spaces", token: app.editor, headers: [HTTPField.Name("Last-Event-ID")!: otherEpoch])
                #expect(header.status == .badRequest && header.errorField == "clientID", "\(header.status) \(header.errorField ?? "-")")
            }
        }
    }

    /// A feed request's checks in the contract's order: every malformed parameter (`topics`, the
    /// cursor, `clientID`) is a `400` before another user's device is a `404`, and that before a
    /// filter outside the grammar or a `limit` out of range is a `422`; the snapshot's cursor is
    /// checked before its filters.
    @Test(arguments: ["/v1/changes", "/v1/changes/stream"])
    func aFeedRequestIsCheckedInTheContractsOrder(route: String) async throws {
        try await withTestApp { app in
            try await app.test { client in
                try await client.command(#"{"selectTab":{"tab":"settings"}}"#, clientID: "phone", token: app.editor)
                let cases: [(query: String, token: String, status: HTTPResponse.Status, field: String)] = [
                    ("topics=moods&filter=nme", app.editor, .badRequest, "topics"),
                    ("since=garbage&filter=nme", app.editor, .badRequest, "since"),
                    ("clientID=no%20spaces&filter=nme", app.editor, .badRequest, "clientID"),
                    ("since=garbage&clientID=phone", app.otherEditor, .badRequest, "since"),
                    ("clientID=phone&filter=nme", app.otherEditor, .notFound, ""),
                    ("clientID=phone&filter=nme", app.editor, .unprocessableContent, "filter"),
                ] + (route == "/v1/changes" ? [("clientID=phone&limit=0", app.otherEditor, .notFound, "")] : [])
                for (query, token, status, field) in cases {
                    let response = try await client.send(.get, "\(route)?\(query)", token: token)
                    #expect(response.status == status && (response.errorField ?? "") == field, "\(query): \(response.status) \(response.errorField ?? "-")")
                }
                for query in ["filter=nme&since=garbage", "fromFilter=nme&since=garbage"] {
                    let response = try await client.send(.get, "/v1/snapshot?\(query)", token: app.editor)
                    #expect(response.status == .badRequest && response.errorField == "since", "\(query): \(response.status)")
                }
                // fromFilter without a cursor: each parameter well-formed, the pair not.
                let noSince = try await client.send(.get, "/v1/snapshot?fromFilter=quantity%20%3E%201", token: app.editor)
                #expect(noSince.status == .unprocessableContent && noSince.errorField == "since")
            }
        }
    }

    /// A feed request names its device with `clientID=`: malformed is `400`, another user's device
    /// `404`, and the presence topic is one of the topics.
    @Test func aFeedRequestNamesItsDevice() async throws {
        try await withTestApp { app in
            try await app.test { client in
                try await client.command(#"{"selectTab":{"tab":"settings"}}"#, clientID: "phone", token: app.editor)
                let bad = try await client.send(.get, "/v1/changes?clientID=no%20spaces", token: app.editor)
                #expect(bad.status == .badRequest && bad.errorCode == "invalidParameter" && bad.errorField == "clientID")
                let theirs = try await client.send(.get, "/v1/changes?clientID=phone", token: app.otherEditor)
                #expect(theirs.status == .notFound)
                let mine = try await client.send(.get, "/v1/changes?clientID=phone&topics=items,navigation,presence", token: app.editor)
                #expect(mine.status == .ok)
                let oldest = try await client.send(.get, "/v1/changes?since=oldest&limit=1", token: app.editor)
                #expect(oldest.status == .ok)
                let unknown = try await client.send(.get, "/v1/changes?topics=moods", token: app.editor)
                #expect(unknown.status == .badRequest && unknown.errorField == "topics")
                let navigation = try await client.send(.get, "/v1/clients/phone/navigation", token: app.editor).json
                #expect(navigation["online"] is Bool)
                #expect(navigation.keys.contains("lastSeenAt"))
            }
        }
    }
}
