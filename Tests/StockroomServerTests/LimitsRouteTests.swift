import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import StockroomCore
import Testing

/// What one request may cost (issue #14, points 4 and 5), over HTTP.
@Suite("Request cost limits over HTTP")
struct LimitsRouteTests {
    /// The reproduction: a viewer puts a huge name in a draft, then repeats small commands.
    @Test func aViewerCannotGrowTheLogWithAHugeDraft() async throws {
        try await withTestApp { app in
            try await app.test { client in
                #expect(try await client.command(#"{"openAdd":{}}"#, clientID: "tab", token: app.viewer).status == .ok)
                let before = try await client.send(.get, "/v1/clients/tab/navigation", token: app.viewer)
                let huge = String(repeating: "x", count: 1_000_000)
                for name in [huge, "e" + String(repeating: #"\u0301"#, count: 150_000)] {
                    let response = try await client.command(
                        #"{"updateDraft":{"draft":{"name":"\#(name)","color":null,"status":{"inStock":{"quantity":1}}}}}"#,
                        clientID: "tab", token: app.viewer)
                    #expect(response.status == .unprocessableContent)
                    #expect(response.errorCode == "validationFailed")
                }
                let after = try await client.send(.get, "/v1/clients/tab/navigation", token: app.viewer)
                // The navigation is as it was (its device's lastSeenAt may move: a refused command is still the device seen).
                #expect(try after.decode(Navigation.self) == before.decode(Navigation.self))
            }
        }
    }

    @Test func putRefusesADraftOrPathLargerThanAPushCouldMake() async throws {
        try await withTestApp { app in
            try await app.test { client in
                let item = try await client.createItem("Mug", token: app.editor)
                let route = #"{"item":{"id":"\#(item.id)"}}"#
                let deep = Array(repeating: route, count: NavigationState.maxPathDepth + 1).joined(separator: ",")
                let bigDraft = #"{"add":{"draft":{"name":"\#(String(repeating: "x", count: 9000))","color":null,"status":{"inStock":{"quantity":1}}}}}"#
                for (body, field) in [
                    (#"{"tab":"inventory","path":[\#(deep)],"destination":null}"#, "path"),
                    (#"{"tab":"inventory","path":[],"destination":\#(bigDraft)}"#, "name"),
                ] {
                    let response = try await client.send(.put, "/v1/clients/desk/navigation", token: app.editor, json: body)
                    #expect(response.status == .unprocessableContent)
                    #expect(try response.json["error"].flatMap { ($0 as? [String: Any])?["field"] as? String } == field)
                }
                let full = Array(repeating: route, count: NavigationState.maxPathDepth).joined(separator: ",")
                let ok = try await client.send(
                    .put, "/v1/clients/desk/navigation", token: app.editor, json: #"{"tab":"inventory","path":[\#(full)],"destination":null}"#)
                #expect(ok.status == .ok)
                let push = try await client.command(#"{"push":{"route":\#(route)}}"#, clientID: "desk", token: app.editor)
                #expect(push.status == .unprocessableContent)
            }
        }
    }

    @Test func anItemNameOfOneHugeCharacterIs422() async throws {
        try await withTestApp { app in
            try await app.test { client in
                let name = "e" + String(repeating: "\u{301}", count: 150_000)
                let response = try await client.send(.post, "/v1/items", token: app.editor, json: draftJSON(name: name))
                #expect(response.status == .unprocessableContent)
                #expect(response.errorCode == "validationFailed")
                let colour = try await client.send(
                    .post, "/v1/items", token: app.editor,
                    json: #"{"name":"Mug","color":{"name":"e\#(String(repeating: #"\u0301"#, count: 100_000))","red":0,"green":0,"blue":0},"status":{"inStock":{"quantity":1}}}"#)
                #expect(colour.status == .unprocessableContent)
            }
        }
    }
}
