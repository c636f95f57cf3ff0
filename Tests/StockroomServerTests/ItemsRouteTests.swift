import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import StockroomCore
import StockroomWire
@testable import StockroomServer
import Testing

@Suite("Items routes")
struct ItemsRouteTests {
    @Test func createThenGetReturnsTheSameItemWithETagAndLocation() async throws {
        try await withTestApp { app in
            try await app.test { client in
                let created = try await client.send(.post, "/v1/items", token: app.editor, json: draftJSON(name: "  Lamp  ", color: "Teal"))
                #expect(created.status == .created)
                let item: Item = try created.decode()
                #expect(created.headers[.location] == "/v1/items/\(item.id)")
                #expect(created.headers[.eTag] == "\"1\"")
                #expect(created.headers[.contentType] == "application/json; charset=utf-8")
                #expect(item.name == "Lamp")
                #expect(item.color == Color(name: "Teal", red: 0.5, green: 0.25, blue: 1))
                #expect(item.status == .inStock(quantity: 1))
                #expect(item.version == 1)
                #expect(item.createdAt == item.updatedAt)

                let fetched = try await client.send(.get, "/v1/items/\(item.id.description.uppercased())", token: app.viewer)
                #expect(fetched.status == .ok)
                #expect(fetched.headers[.eTag] == "\"1\"")
                #expect(try fetched.decode(Item.self) == item)
            }
        }
    }

    @Test func nullFieldsAreWrittenAsNull() async throws {
        try await withTestApp { app in
            try await app.test { client in
                let created = try await client.send(.post, "/v1/items", token: app.editor, json: draftJSON(name: "Plain"))
                let json = try created.json
                #expect(json["color"] is NSNull)
            }
        }
    }

    @Test func createWithClientIDUsesItAndRefusesReuseEvenAfterDelete() async throws {
        try await withTestApp { app in
            try await app.test { client in
                let id = "8E1A5B3C-1111-4222-8333-944455556666"
                let created = try await client.send(.post, "/v1/items", token: app.editor, json: draftJSON(name: "Desk", id: id))
                #expect(created.status == .created)
                #expect(try created.decode(Item.self).id.description == id.lowercased())

                let again = try await client.send(.post, "/v1/items", token: app.editor, json: draftJSON(name: "Desk", id: id))
                #expect(again.status == .conflict)
                #expect(again.errorCode == "alreadyExists")

                #expect(try await client.send(.delete, "/v1/items/\(id)", token: app.editor).status == .noContent)
                let afterDelete = try await client.send(.post, "/v1/items", token: app.editor, json: draftJSON(name: "Desk", id: id))
                #expect(afterDelete.status == .conflict)
                #expect(afterDelete.errorCode == "alreadyExists")
            }
        }
    }

    @Test func putWritesTheDraftAndBumpsTheVersion() async throws {
        try await withTestApp { app in
            try await app.test { client in
                let item: Item = try await client.send(.post, "/v1/items", token: app.editor, json: draftJSON(name: "Mug")).decode()
                // Read before the write, so that the GET after it follows an item the server kept in memory at version 1.
                #expect(try await client.send(.get, "/v1/items/\(item.id)", token: app.viewer).decode(Item.self) == item)
                let put = try await client.send(
                    .put, "/v1/items/\(item.id)", token: app.editor, json: draftJSON(name: "Big Mug", quantity: nil, backOrdered: true),
                    headers: [.ifMatch: "\"1\""])
                #expect(put.status == .ok)
                #expect(put.headers[.eTag] == "\"2\"")
                let updated: Item = try put.decode()
                #expect(updated.id == item.id)
                #expect(updated.name == "Big Mug")
                #expect(updated.status == .outOfStock(isOnBackOrder: true))
                #expect(updated.version == 2)
                #expect(updated.createdAt == item.createdAt)
                let get = try await client.send(.get, "/v1/items/\(item.id)", token: app.viewer)
                #expect(get.headers[.eTag] == "\"2\"")
                #expect(try get.decode(Item.self) == updated)

                let star = try await client.send(.put, "/v1/items/\(item.id)", token: app.editor, json: draftJSON(name: "Mug 3"), headers: [.ifMatch: "*"])
                #expect(try star.decode(Item.self).version == 3)
            }
        }
    }

    @Test func staleIfMatchIs412AndChangesNothing() async throws {
        try await withTestApp { app in
            try await app.test { client in
                let item: Item = try await client.send(.post, "/v1/items", token: app.editor, json: draftJSON(name: "Mug")).decode()
                for tag in ["\"7\"", "W/\"1\"", "\"01\"", "\"+1\"", ""] {
                    let put = try await client.send(.put, "/v1/items/\(item.id)", token: app.editor, json: draftJSON(name: "X"), headers: [.ifMatch: tag])
                    #expect(put.status == .preconditionFailed, "If-Match: \(tag)")
                    #expect(put.errorCode == "preconditionFailed")
                }
                let delete = try await client.send(.delete, "/v1/items/\(item.id)", token: app.editor, headers: [.ifMatch: "\"2\""])
                #expect(delete.status == .preconditionFailed)
                #expect(try await client.send(.get, "/v1/items/\(item.id)", token: app.viewer).decode(Item.self) == item)
            }
        }
    }

    /// RFC 9110 list syntax: empty elements, a comma inside a tag, several header lines; weak tags never match.
    @Test(arguments: [
        (["\"x\", , \"1\""], true), (["\"a,b\", \"1\""], true), ([", \"1\","], true), (["\"7\"", "\"1\""], true),
        ([" \"1\" "], true), (["W/\"1\", \"2\""], false), (["\"a,b\""], false), ([", ,"], false), (["W/\"1\""], false),
    ])
    func ifMatchListsFollowTheListGrammar(lines: [String], matches: Bool) async throws {
        try await withTestApp { app in
            try await app.test { client in
                let item: Item = try await client.send(.post, "/v1/items", token: app.editor, json: draftJSON(name: "Mug")).decode()
                var headers = HTTPFields()
                for line in lines { headers.append(HTTPField(name: .ifMatch, value: line)) }
                let put = try await client.send(.put, "/v1/items/\(item.id)", token: app.editor, json: draftJSON(name: "Big Mug"), headers: headers)
                #expect(put.status == (matches ? .ok : .preconditionFailed), "If-Match: \(lines)")
                let current: Item = try await client.send(.get, "/v1/items/\(item.id)", token: app.viewer).decode()
                #expect(current.version == (matches ? 2 : 1))
            }
        }
    }

    @Test(arguments: ["garbage", "1", "\"1", "\"1\"\"2\"", "*, \"1\"", "\"1\" \"2\"", "W/1", "\"é\"", "\"1\";"])
    func unparseableIfMatchIs400AndChangesNothing(tag: String) async throws {
        try await withTestApp { app in
            try await app.test { client in
                let item: Item = try await client.send(.post, "/v1/items", token: app.editor, json: draftJSON(name: "Mug")).decode()
                let put = try await client.send(.put, "/v1/items/\(item.id)", token: app.editor, json: draftJSON(name: "X"), headers: [.ifMatch: tag])
                #expect(put.status == .badRequest)
                #expect(put.errorCode == "invalidParameter")
                #expect(put.errorField == "If-Match")
                let delete = try await client.send(.delete, "/v1/items/\(item.id)", token: app.editor, headers: [.ifMatch: tag])
                #expect(delete.status == .badRequest)
                #expect(try await client.send(.get, "/v1/items/\(item.id)", token: app.viewer).decode(Item.self) == item)
            }
        }
    }

    /// `If-None-Match` on a GET: a list that names the current version, weakly compared, or `*`, is
    /// `304` with the ETag and no body; anything else is the item.
    @Test(arguments: [
        (["\"1\""], true), (["W/\"1\""], true), (["*"], true), (["\"7\", \"1\""], true), (["\"7\"", "\"1\""], true),
        (["\"x\", , W/\"1\""], true), (["\"2\""], false), (["\"01\""], false), ([", ,"], false), (["\"a,1\""], false),
    ])
    func aGetNamingTheVersionHeldIs304WithoutABody(lines: [String], notModified: Bool) async throws {
        try await withTestApp { app in
            try await app.test { client in
                let item: Item = try await client.send(.post, "/v1/items", token: app.editor, json: draftJSON(name: "Mug")).decode()
                var headers = HTTPFields()
                for line in lines { headers.append(HTTPField(name: .ifNoneMatch, value: line)) }
                let get = try await client.send(.get, "/v1/items/\(item.id)", token: app.viewer, headers: headers)
                #expect(get.headers[.eTag] == "\"1\"", "If-None-Match: \(lines)")
                if notModified {
                    #expect(get.status == .notModified, "If-None-Match: \(lines)")
                    #expect(get.body.readableBytes == 0)
                } else {
                    #expect(get.status == .ok, "If-None-Match: \(lines)")
                    #expect(try get.decode(Item.self) == item)
                }
            }
        }
    }

    /// After a write the tag a client held names an old version: the GET is the new item.
    @Test func aGetAfterAWriteIsTheNewItemAndItsTag() async throws {
        try await withTestApp { app in
            try await app.test { client in
                let item: Item = try await client.send(.post, "/v1/items", token: app.editor, json: draftJSON(name: "Mug")).decode()
                let written: Item = try await client.send(.put, "/v1/items/\(item.id)", token: app.editor, json: draftJSON(name: "Big Mug")).decode()
                let get = try await client.send(.get, "/v1/items/\(item.id)", token: app.viewer, headers: [.ifNoneMatch: "\"1\""])
                #expect(get.status == .ok)
                #expect(get.headers[.eTag] == "\"2\"")
                #expect(try get.decode(Item.self) == written)
                let again = try await client.send(.get, "/v1/items/\(item.id)", token: app.viewer, headers: [.ifNoneMatch: "\"2\""])
                #expect(again.status == .notModified)
            }
        }
    }

    /// A malformed `If-None-Match` is `400` naming the header; a missing item is `404` whatever it holds.
    @Test(arguments: ["garbage", "1", "\"1", "*, \"1\"", "\"1\" \"2\"", "\"é\""])
    func anUnparseableIfNoneMatchIs400(tag: String) async throws {
        try await withTestApp { app in
            try await app.test { client in
                let item: Item = try await client.send(.post, "/v1/items", token: app.editor, json: draftJSON(name: "Mug")).decode()
                let get = try await client.send(.get, "/v1/items/\(item.id)", token: app.viewer, headers: [.ifNoneMatch: tag])
                #expect(get.status == .badRequest)
                #expect(get.errorCode == "invalidParameter")
                #expect(get.errorField == "If-None-Match")
                let missing = try await client.send(.get, "/v1/items/\(ItemID.random())", token: app.viewer, headers: [.ifNoneMatch: "*"])
                #expect(missing.status == .notFound)
            }
        }
    }

    /// A `304` to a conditional GET has no body, and no `Content-Length` of its own that a client
    /// could read as one: pipelined, the next answer on the connection comes whole.
    @Test func aNotModifiedItemEndsAtItsHead() async throws {
        try await withTestApp { app in
            try await app.live { client in
                let port = try #require(client.port)
                let created = try await client.send(.post, "/v1/items", token: app.editor, json: draftJSON(name: "Mug"))
                let id = try created.decode(Item.self).id
                let exchange = try await blocking {
                    try RawSocket(
                        port: port,
                        raw: "GET /v1/items/\(id) HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(app.viewer)\r\nIf-None-Match: \"1\"\r\n\r\n"
                            + "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                    ).failingStalledReads().readAll()
                }
                let answers = exchange.components(separatedBy: "HTTP/1.1 ").dropFirst()
                #expect(answers.count == 2, "\(exchange.prefix(800))")
                let notModified = answers.first ?? ""
                #expect(notModified.hasPrefix("304 Not Modified\r\n") && notModified.contains("ETag: \"1\"\r\n"), "\(notModified)")
                #expect(notModified.hasSuffix("\r\n\r\n"), "no body after the 304's head: \(notModified)")
                #expect(!notModified.lowercased().contains("content-length: 0"), "\(notModified)")
                #expect(answers.last?.hasSuffix(#"{"status":"ok"}"#) == true, "\(exchange.prefix(800))")
            }
        }
    }

    @Test func parameterErrorsComeBeforeRangeErrorsAndMissingItems() async throws {
        try await withTestApp { app in
            try await app.test { client in
                let list = try await client.send(.get, "/v1/items?limit=0&after=%25%25", token: app.viewer)
                #expect(list.status == .badRequest)
                let key = HTTPField.Name("Idempotency-Key")!
                let put = try await client.send(
                    .put, "/v1/items/not-a-uuid", token: app.editor, json: draftJSON(name: "X"), headers: [key: String(repeating: "k", count: 300)])
                #expect(put.status == .badRequest)
                #expect(put.errorField == "Idempotency-Key")
            }
        }
    }

    @Test func deleteIsATombstoneThatReadsAsMissing() async throws {
        try await withTestApp { app in
            try await app.test { client in
                let item: Item = try await client.send(.post, "/v1/items", token: app.editor, json: draftJSON(name: "Mug")).decode()
                let delete = try await client.send(.delete, "/v1/items/\(item.id)", token: app.editor, headers: [.ifMatch: "\"1\""])
                #expect(delete.status == .noContent)
                #expect(delete.body.readableBytes == 0)
                for (method, json) in [(HTTPRequest.Method.get, nil), (.put, draftJSON(name: "Y")), (.delete, nil)] as [(HTTPRequest.Method, String?)] {
                    let response = try await client.send(method, "/v1/items/\(item.id)", token: app.editor, json: json)
                    #expect(response.status == .notFound)
                    #expect(response.errorCode == "notFound")
                }
                let list: [String: Any] = try await client.send(.get, "/v1/items", token: app.viewer).json
                #expect((list["items"] as? [Any])?.isEmpty == true)
            }
        }
    }

    @Test func malformedOrUnknownItemIDIs404() async throws {
        try await withTestApp { app in
            try await app.test { client in
                for path in ["/v1/items/not-a-uuid", "/v1/items/\(UUID().uuidString)"] {
                    let response = try await client.send(.get, path, token: app.viewer)
                    #expect(response.status == .notFound)
                    #expect(response.errorCode == "notFound")
                }
            }
        }
    }

    @Test(arguments: [
        ("", "name"),
        ("   ", "name"),
        (String(repeating: "x", count: 201), "name"),
    ])
    func invalidNameIs422(name: String, field: String) async throws {
        try await withTestApp { app in
            try await app.test { client in
                let response = try await client.send(.post, "/v1/items", token: app.editor, json: draftJSON(name: name))
                #expect(response.status == .unprocessableContent)
                #expect(response.errorCode == "validationFailed")
                #expect(response.errorField == field)
            }
        }
    }

    @Test func outOfRangeValuesAre422AndChangeNothing() async throws {
        try await withTestApp { app in
            try await app.test { client in
                let item: Item = try await client.send(.post, "/v1/items", token: app.editor, json: draftJSON(name: "Mug")).decode()
                let bodies = [
                    draftJSON(name: "Mug", quantity: -1),
                    draftJSON(name: "Mug", quantity: 1_000_000_001),
                    #"{"name":"Mug","color":{"name":"","red":0,"green":0,"blue":0},"status":{"inStock":{"quantity":1}}}"#,
                    #"{"name":"Mug","color":{"name":"Red","red":1.5,"green":0,"blue":0},"status":{"inStock":{"quantity":1}}}"#,
                ]
                for body in bodies {
                    let response = try await client.send(.put, "/v1/items/\(item.id)", token: app.editor, json: body)
                    #expect(response.status == .unprocessableContent, "\(body)")
                    #expect(response.errorCode == "validationFailed")
                }
                #expect(try await client.send(.get, "/v1/items/\(item.id)", token: app.viewer).decode(Item.self) == item)
            }
        }
    }

    @Test(arguments: [
        "not json",
        "{}",
        #"{"name":"A"}"#,
        #"{"name":3,"status":{"inStock":{"quantity":1}}}"#,
        #"{"name":"A","status":{"sold":{}}}"#,
        #"{"name":"A","status":{"inStock":{"quantity":"many"}}}"#,
        #"{"name":"A","status":{"inStock":{"quantity":1}},"id":"nope"}"#,
        "[]",
    ])
    func malformedBodyIs400InvalidJSON(body: String) async throws {
        try await withTestApp { app in
            try await app.test { client in
                let response = try await client.send(.post, "/v1/items", token: app.editor, json: body)
                #expect(response.status == .badRequest)
                #expect(response.errorCode == "invalidJSON")
                let list: [String: Any] = try await client.send(.get, "/v1/items", token: app.viewer).json
                #expect((list["items"] as? [Any])?.isEmpty == true)
            }
        }
    }

    /// The clear words of a body of the wrong shape: a body that is not an object says so, and a
    /// name out of its set (a tab, a role) lists the set, naming its field.
    @Test func aBodyOfTheWrongShapeSaysWhatItMustBe() async throws {
        try await withTestApp { app in
            try await app.test { client in
                for body in ["[]", "null", "1", #""item""#] {
                    let response = try await client.send(.post, "/v1/items", token: app.editor, json: body)
                    #expect(response.errorCode == "invalidJSON", "\(body)")
                    #expect((try? response.json["error"] as? [String: Any])?["message"] as? String == "the body must be a JSON object", "\(body)")
                    #expect(response.errorField == nil)
                }
                let tab = try await client.send(
                    .put, "/v1/clients/phone/navigation", token: app.editor, json: #"{"tab":"bogus","path":[],"destination":null}"#)
                #expect(tab.status == .badRequest)
                #expect(tab.errorField == "tab")
                #expect(String(buffer: tab.body).contains("'bogus' is not one of inventory, settings"), "\(String(buffer: tab.body))")
                // An enum's object form takes one of its keys: none, or several, lists them.
                for (command, found) in [(#"{"fly":{}}"#, "none of them"), (#"{"pop":{},"popToRoot":{}}"#, "2 of them (pop, popToRoot)")] {
                    let response = try await client.send(.post, "/v1/clients/phone/commands", token: app.editor, json: #"{"command":\#(command)}"#)
                    #expect(response.errorField == "command")
                    #expect(String(buffer: response.body).contains("one of selectTab, push, pop, popToRoot,"), "\(String(buffer: response.body))")
                    #expect(String(buffer: response.body).contains("it has \(found)"), "\(String(buffer: response.body))")
                }
                let status = try await client.send(.post, "/v1/items", token: app.editor, json: #"{"name":"A","color":null,"status":{"sold":{}}}"#)
                #expect(status.errorField == "status")
                #expect(String(buffer: status.body).contains("one of inStock, outOfStock, is expected"), "\(String(buffer: status.body))")
                let role = try await client.send(.post, "/v1/tokens", token: app.admin, json: #"{"user":"x","role":"root"}"#)
                #expect(role.errorField == "role")
                #expect(String(buffer: role.body).contains("'root' is not one of viewer, editor, admin"), "\(String(buffer: role.body))")
            }
        }
    }

    /// A number its field cannot hold is a field of the wrong type, named, not a body that is not
    /// JSON (which the decoder says of it); nothing is written.
    @Test func aNumberItsFieldCannotHoldNamesTheField() async throws {
        try await withTestApp { app in
            try await app.test { client in
                let cases: [(path: String, body: String, field: String?, message: String)] = [
                    ("/v1/items", #"{"name":"A","color":null,"status":{"inStock":{"quantity":1.5}}}"#,
                     "status.inStock.quantity", "field 'status.inStock.quantity' has the wrong type: 1.5 is not a whole number in range"),
                    ("/v1/items", #"{"name":"A","color":null,"status":{"inStock":{"quantity":9223372036854775808}}}"#,
                     "status.inStock.quantity", "field 'status.inStock.quantity' has the wrong type: 9223372036854775808 is not a whole number in range"),
                    ("/v1/items", #"{"name":"A","color":{"name":"c","red":1e400,"green":0,"blue":0},"status":{"inStock":{"quantity":1}}}"#,
                     "color.red", "field 'color.red' has the wrong type: 1e400 is not a number in range"),
                    ("/v1/clients/phone/commands", #"{"command":{"updateDraft":{"draft":{"name":"A","color":null,"status":{"inStock":{"quantity":2.5}}}}}}"#,
                     "command.updateDraft.draft.status.inStock.quantity",
                     "field 'command.updateDraft.draft.status.inStock.quantity' has the wrong type: 2.5 is not a whole number in range"),
                    ("/v1/items", #"{"name":"A","status":{"inStock":{"quantity":1.5}}"#, nil, "body is not valid JSON"),
                ]
                for (path, body, field, message) in cases {
                    let response = try await client.send(.post, path, token: app.editor, json: body)
                    #expect(response.status == .badRequest, "\(body)")
                    #expect(response.errorCode == "invalidJSON", "\(body)")
                    #expect(response.errorField == field, "\(body)")
                    let error = try #require(try response.json["error"] as? [String: Any])
                    #expect(error["message"] as? String == message, "\(body)")
                }
                let list: [String: Any] = try await client.send(.get, "/v1/items", token: app.viewer).json
                #expect((list["items"] as? [Any])?.isEmpty == true)
            }
        }
    }

    /// A member name given twice in one object is refused, named, on every body `JSONDecoder`
    /// reads (the fast readers give up on it); nothing is written. JSONDecoder alone kept one of the
    /// two values and wrote it.
    @Test func aNameGivenTwiceIsRefusedAndNamed() async throws {
        try await withTestApp { app in
            try await app.test { client in
                let item: [String: Any] = try await client.send(.post, "/v1/items", token: app.editor, json: draftJSON(name: "Cable", quantity: 3)).json
                let id = try #require(item["id"] as? String)
                let cases: [(method: HTTPRequest.Method, path: String, body: String, field: String)] = [
                    (.post, "/v1/items", #"{"name":"A","name":"B","color":null,"status":{"inStock":{"quantity":1}}}"#, "name"),
                    (.post, "/v1/items", #"{"name":"A","n\u0061me":"B","color":null,"status":{"inStock":{"quantity":1}}}"#, "name"),
                    (.put, "/v1/items/\(id)", #"{"name":"Cable","color":null,"status":{"inStock":{"quantity":4,"quantity":-1}}}"#,
                     "status.inStock.quantity"),
                    (.post, "/v1/items/batch", #"{"items":[{"name":"A","color":null,"status":{"inStock":{"quantity":1}}},{"name":"B","color":null,"color":null,"status":{"inStock":{"quantity":1}}}]}"#,
                     "items[1].color"),
                    (.post, "/v1/clients/phone/commands", #"{"command":{"openAdd":{}},"command":{"selectTab":{"tab":"settings"}}}"#, "command"),
                    (.put, "/v1/clients/phone/navigation", #"{"tab":"inventory","tab":"settings","path":[],"destination":null}"#, "tab"),
                ]
                for (method, path, body, field) in cases {
                    let response = try await client.send(method, path, token: app.editor, json: body)
                    #expect(response.status == .badRequest, "\(body)")
                    #expect(response.errorCode == "invalidJSON", "\(body)")
                    #expect(response.errorField == field, "\(body)")
                    let error = try #require(try response.json["error"] as? [String: Any])
                    #expect(error["message"] as? String == "field '\(field)' is given twice in one object; a name may appear once", "\(body)")
                }
                let list: [String: Any] = try await client.send(.get, "/v1/items", token: app.viewer).json
                let items = try #require(list["items"] as? [[String: Any]])
                #expect(items.count == 1)
                #expect(items.first?["version"] as? Int == 1)
                let navigation: [String: Any] = try await client.send(.get, "/v1/clients/phone/navigation", token: app.editor).json
                #expect(navigation["version"] as? Int == 0)
                // The same name in two objects, or twice in an array, is not a repeat.
                let twoObjects = try await client.send(
                    .post, "/v1/items", token: app.editor, json: #"{"name":"A","color":{"name":"name","red":0,"green":0,"blue":0},"status":{"inStock":{"quantity":1}}}"#)
                #expect(twoObjects.status == .created)
            }
        }
    }

    @Test func missingFieldNamesTheField() async throws {
        try await withTestApp { app in
            try await app.test { client in
                let response = try await client.send(.post, "/v1/items", token: app.editor, json: #"{"name":"A"}"#)
                #expect(response.errorField == "status")
            }
        }
    }

    @Test func nonJSONContentTypeIs415() async throws {
        try await withTestApp { app in
            try await app.test { client in
                let response = try await client.send(
                    .post, "/v1/items", token: app.editor, json: draftJSON(name: "A"), headers: [.contentType: "text/plain"])
                #expect(response.status == .unsupportedMediaType)
                #expect(response.errorCode == "unsupportedMediaType")
            }
        }
    }

    /// Bodies are read as sent: one in a content coding is refused, with what would be taken, and
    /// changes nothing, on an item write, a command and the import alike; `identity` is no coding.
    @Test func aBodyInAContentCodingIs415WithAcceptEncoding() async throws {
        try await withTestApp { app in
            try await app.test { client in
                let refused: [(String, String, HTTPFields)] = [
                    ("/v1/items", draftJSON(name: "Zipped"), [.contentEncoding: "gzip"]),
                    ("/v1/items", draftJSON(name: "Zipped"), [.contentEncoding: "identity, br"]),
                    ("/v1/clients/phone/commands", #"{"command":{"selectTab":{"tab":"settings"}}}"#, [.contentEncoding: "deflate"]),
                    ("/v1/items/import", "name,quantity\nZipped,1\n", [.contentEncoding: "gzip", .contentType: "text/csv"]),
                ]
                for (path, body, headers) in refused {
                    let response = try await client.send(.post, path, token: app.editor, json: body, headers: headers)
                    #expect(response.status == .unsupportedMediaType, "\(path) \(headers)")
                    #expect(response.errorCode == "unsupportedMediaType")
                    #expect(response.headers[.acceptEncoding] == "identity")
                }
                let list = try await client.send(.get, "/v1/items", token: app.viewer)
                #expect(!String(buffer: list.body).contains("Zipped"))
                let phone = try await client.send(.get, "/v1/clients/phone/navigation", token: app.editor)
                #expect(phone.headers[.eTag] == "\"0\"", "the command was not applied")
                for coding in ["identity", "Identity"] {
                    let taken = try await client.send(.post, "/v1/items", token: app.editor, json: draftJSON(name: "Plain"), headers: [.contentEncoding: coding])
                    #expect(taken.status == .created, "\(coding)")
                }
            }
        }
    }

    @Test(arguments: [
        ("application/json", true), ("Application/JSON", true), ("application/json; charset=utf-8", true),
        (" application/json\t;charset=utf-8", true), ("application/merge-patch+json", true), ("TEXT/X+JSON", true),
        ("text/plain", false), ("application/jsonx", false), ("application/json5", false), ("json", false),
        ("", false), ("; application/json", false), ("application/ json", false), ("application/j\u{17F}on", false),
    ])
    func contentTypesThatNameJSON(contentType: String, isJSON: Bool) {
        #expect(Request.namesJSON(contentType) == isJSON)
    }

    @Test func jsonContentTypeWithParametersAndCaseIsTaken() async throws {
        try await withTestApp { app in
            try await app.test { client in
                let response = try await client.send(
                    .post, "/v1/items", token: app.editor, json: draftJSON(name: "A"),
                    headers: [.contentType: "Application/JSON ; charset=UTF-8"])
                #expect(response.status == .created)
            }
        }
    }

    @Test func bodyOverOneMebibyteIs413() async throws {
        try await withTestApp { app in
            try await app.test { client in
                let huge = draftJSON(name: String(repeating: "a", count: 1 << 20))
                let response = try await client.send(.post, "/v1/items", token: app.editor, json: huge)
                #expect(response.status == .contentTooLarge)
                #expect(response.errorCode == "payloadTooLarge")
            }
        }
    }

    @Test func listPaginatesInCreationOrderWithKeysetCursors() async throws {
        try await withTestApp { app in
            try await app.test { client in
                var created: [Item] = []
                for index in 0..<7 {
                    created.append(try await client.send(.post, "/v1/items", token: app.editor, json: draftJSON(name: "Item \(index)")).decode())
                }
                // A deleted item in the middle does not disturb the pages.
                try await client.send(.delete, "/v1/items/\(created[3].id)", token: app.editor)
                let expected = created.enumerated().filter { $0.offset != 3 }.map(\.element)

                var seen: [Item] = []
                var cursor: String?
                var pages = 0
                repeat {
                    let uri = "/v1/items?limit=2" + (cursor.map { "&after=\($0)" } ?? "")
                    let page = try await client.send(.get, uri, token: app.viewer)
                    #expect(page.status == .ok)
                    let json = try page.json
                    let items = try JSONCoding.decoder().decode([Item].self, from: JSONSerialization.data(withJSONObject: json["items"] ?? []))
                    seen += items
                    cursor = json["next"] as? String
                    #expect(json["next"] != nil, "next is present, as null on the last page")
                    pages += 1
                } while cursor != nil && pages < 10
                #expect(seen == expected)
                #expect(pages == 3)
            }
        }
    }

    @Test func listFiltersByCaseInsensitiveNameAndStatus() async throws {
        try await withTestApp { app in
            try await app.test { client in
                try await client.send(.post, "/v1/items", token: app.editor, json: draftJSON(name: "Red Keyboard"))
                try await client.send(.post, "/v1/items", token: app.editor, json: draftJSON(name: "keyboard tray", quantity: nil))
                try await client.send(.post, "/v1/items", token: app.editor, json: draftJSON(name: "Mouse"))
                try await client.send(.post, "/v1/items", token: app.editor, json: draftJSON(name: "100% wool"))

                func names(_ query: String) async throws -> [String] {
                    let json = try await client.send(.get, "/v1/items?\(query)", token: app.viewer).json
                    return (json["items"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
                }
                #expect(try await names("q=KEYBOARD") == ["Red Keyboard", "keyboard tray"])
                #expect(try await names("q=keyboard&status=outOfStock") == ["keyboard tray"])
                #expect(try await names("status=inStock") == ["Red Keyboard", "Mouse", "100% wool"])
                #expect(try await names("q=%25") == ["100% wool"])
                #expect(try await names("q=_") == [])
            }
        }
    }

    /// A malformed id is a 404 whose message quotes the id cut to 64 characters, however long the
    /// path; so is an unknown token id's on `DELETE /v1/tokens/{id}`.
    @Test func aLongMalformedIdIsQuotedShort() async throws {
        try await withTestApp { app in
            try await app.test { client in
                let long = String(repeating: "x", count: 4000)
                for (method, json) in [(HTTPRequest.Method.get, nil), (.put, draftJSON(name: "x")), (.delete, nil)] as [(HTTPRequest.Method, String?)] {
                    let response = try await client.send(method, "/v1/items/\(long)", token: app.editor, json: json)
                    #expect(response.status == .notFound && response.errorCode == "notFound")
                    let message = try #require((response.json["error"] as? [String: Any])?["message"] as? String)
                    #expect(message == "no item " + String(repeating: "x", count: 64) + "...")
                }
                let short = try await client.send(.get, "/v1/items/not-an-id", token: app.viewer)
                #expect(try (short.json["error"] as? [String: Any])?["message"] as? String == "no item not-an-id")
                let token = try await client.send(.delete, "/v1/tokens/\(long)", token: app.admin)
                #expect(token.status == .notFound)
                #expect(try (token.json["error"] as? [String: Any])?["message"] as? String == "no token " + String(repeating: "x", count: 64) + "...")
            }
        }
    }

    /// As HTML forms, `URLSearchParams` and Python's `requests` write a query: `+` is a space, a
    /// literal `+` is `%2B`.
    @Test func aPlusInTheQueryIsASpace() async throws {
        try await withTestApp { app in
            try await app.test { client in
                try await client.send(.post, "/v1/items", token: app.editor, json: draftJSON(name: "Red Keyboard"))
                try await client.send(.post, "/v1/items", token: app.editor, json: draftJSON(name: "C++ primer", quantity: nil))

                func names(_ query: String) async throws -> [String] {
                    let json = try await client.send(.get, "/v1/items?\(query)", token: app.viewer).json
                    return (json["items"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
                }
                #expect(try await names("q=red+keyboard") == ["Red Keyboard"])
                #expect(try await names("q=red%20keyboard") == ["Red Keyboard"])
                #expect(try await names("q=c%2B%2B") == ["C++ primer"])
                #expect(try await names("q=c++") == [])
                #expect(try await names("q=c%2B%2B+primer&status=outOfStock") == ["C++ primer"])
                // A name is decoded as a value is.
                #expect(try await names("%71=keyboard") == ["Red Keyboard"])
                let bad = try await client.send(.get, "/v1/items?status=in+stock", token: app.viewer)
                #expect(bad.status == .badRequest)
                #expect(bad.errorCode == "invalidParameter")
            }
        }
    }

    @Test(arguments: [
        ("limit=abc", HTTPResponse.Status.badRequest, "invalidParameter"),
        ("limit=0", .unprocessableContent, "validationFailed"),
        ("limit=501", .unprocessableContent, "validationFailed"),
        ("after=%%%", .badRequest, "invalidParameter"),
        ("after=bm9wZQ", .badRequest, "invalidParameter"),
        ("status=sold", .badRequest, "invalidParameter"),
    ])
    func badListParameters(query: String, status: HTTPResponse.Status, code: String) async throws {
        try await withTestApp { app in
            try await app.test { client in
                let response = try await client.send(.get, "/v1/items?\(query)", token: app.viewer)
                #expect(response.status == status)
                #expect(response.errorCode == code)
            }
        }
    }

    @Test func unknownRouteIsJSON404() async throws {
        try await withTestApp { app in
            try await app.test { client in
                let response = try await client.send(.get, "/nowhere")
                #expect(response.status == .notFound)
                #expect(response.errorCode == "notFound")
            }
        }
    }

    @Test func aRestartOnTheSameFileKeepsTheData() async throws {
        try await withTestApp { app in
            let item: Item = try await app.test { client in
                try await client.send(.post, "/v1/items", token: app.editor, json: draftJSON(name: "Survivor")).decode()
            }
            try await app.test { client in
                let fetched = try await client.send(.get, "/v1/items/\(item.id)", token: app.editor)
                #expect(try fetched.decode(Item.self) == item)
            }
        }
    }
}
