import Foundation
import Hummingbird
import HummingbirdTesting
import StockroomCore
import TestSupport
import Testing

@Suite("Auth and roles")
struct AuthTests {
    @Test(arguments: [nil, "Bearer nope", "Basic abc", "Bearer "])
    func missingOrBadTokenIs401WithChallenge(authorization: String?) async throws {
        try await withTestApp { app in
            try await app.test { client in
                var headers: HTTPFields = [:]
                if let authorization { headers[.authorization] = authorization }
                let response = try await client.send(.get, "/v1/items", headers: headers)
                #expect(response.status == .unauthorized)
                #expect(response.headers[.wwwAuthenticate] == "Bearer")
                #expect(response.errorCode == "unauthorized")
            }
        }
    }

    @Test func theBearerSchemeIsMatchedInAnyCaseAndBlanksAroundTheSecretAreDropped() async throws {
        try await withTestApp { app in
            try await app.test { client in
                let accepted = ["Bearer \(app.viewer)", "bEaReR \(app.viewer)", "BEARER \t \(app.viewer) \t"]
                for authorization in accepted {
                    let response = try await client.send(.get, "/v1/items", headers: [.authorization: authorization])
                    #expect(response.status == .ok, "\(authorization.debugDescription)")
                }
                let refused = ["Bearer", "Bearer \t ", "Bearer\(app.viewer)", "Bearer \(app.viewer)x", "Bearer x\(app.viewer)", "Bearen \(app.viewer)"]
                for authorization in refused {
                    let response = try await client.send(.get, "/v1/items", headers: [.authorization: authorization])
                    #expect(response.status == .unauthorized, "\(authorization.debugDescription)")
                }
            }
        }
    }

    @Test func viewerReadsButMayNotWriteItems() async throws {
        try await withTestApp { app in
            try await app.test { client in
                let item: Item = try await client.send(.post, "/v1/items", token: app.editor, json: draftJSON(name: "Mug")).decode()
                #expect(try await client.send(.get, "/v1/items", token: app.viewer).status == .ok)
                #expect(try await client.send(.get, "/v1/items/\(item.id)", token: app.viewer).status == .ok)
                let writes: [(HTTPRequest.Method, String, String?)] = [
                    (.post, "/v1/items", draftJSON(name: "X")),
                    (.put, "/v1/items/\(item.id)", draftJSON(name: "X")),
                    (.delete, "/v1/items/\(item.id)", nil),
                ]
                for (method, path, body) in writes {
                    let response = try await client.send(method, path, token: app.viewer, json: body)
                    #expect(response.status == .forbidden, "\(method) \(path)")
                    #expect(response.errorCode == "forbidden")
                }
                #expect(try await client.send(.get, "/v1/items/\(item.id)", token: app.viewer).decode(Item.self) == item)
            }
        }
    }

    @Test func checksRunInContractOrder401Then403Then400Then404() async throws {
        try await withTestApp { app in
            try await app.test { client in
                let missing = "/v1/items/\(UUID())"
                let anonymous = try await client.send(.put, missing, json: "garbage")
                let viewer = try await client.send(.put, missing, token: app.viewer, json: "garbage")
                let malformed = try await client.send(.put, missing, token: app.editor, json: "garbage")
                let invalid = try await client.send(.put, missing, token: app.editor, json: draftJSON(name: ""))
                #expect([anonymous.status, viewer.status, malformed.status, invalid.status] == [.unauthorized, .forbidden, .badRequest, .notFound])
            }
        }
    }

    @Test func aCommandsRoleIsCheckedBeforeItsClientID() async throws {
        try await withTestApp { app in
            try await app.test { client in
                let bad = "/v1/clients/bad%20id/commands"
                let save = try await client.send(.post, bad, token: app.viewer, json: #"{"command":{"save":{}}}"#)
                let keepMine = try await client.send(.post, bad, token: app.viewer, json: #"{"command":{"resolveConflict":{"keep":"mine"}}}"#)
                let allowed = try await client.send(.post, bad, token: app.viewer, json: #"{"command":{"cancel":{}}}"#)
                let malformed = try await client.send(.post, bad, token: app.viewer, json: "garbage")
                #expect([save.status, keepMine.status, allowed.status, malformed.status] == [.forbidden, .forbidden, .badRequest, .badRequest])
                #expect([save.errorCode, allowed.errorField] == ["forbidden", "clientID"])
            }
        }
    }

    @Test func onlyAdminsManageTokens() async throws {
        try await withTestApp { app in
            try await app.test { client in
                for token in [app.viewer, app.editor] {
                    let list = try await client.send(.get, "/v1/tokens", token: token)
                    let create = try await client.send(.post, "/v1/tokens", token: token, json: #"{"user":"x","role":"admin"}"#)
                    #expect([list.status, create.status] == [.forbidden, .forbidden])
                }
            }
        }
    }

    @Test func adminCreatesListsAndRevokesATokenThatIsRefusedAtOnce() async throws {
        try await withTestApp { app in
            try await app.test { client in
                let created = try await client.send(.post, "/v1/tokens", token: app.admin, json: #"{"user":"newbie","role":"editor"}"#)
                #expect(created.status == .created)
                let json = try created.json
                let id = try #require(json["id"] as? String)
                let secret = try #require(json["token"] as? String)
                #expect(json["user"] as? String == "newbie")
                #expect(json["role"] as? String == "editor")
                #expect(json["createdAt"] is String)

                #expect(try await client.send(.post, "/v1/items", token: secret, json: draftJSON(name: "By newbie")).status == .created)

                let list = try await client.send(.get, "/v1/tokens", token: app.admin)
                let listed = try #require(try list.json["tokens"] as? [[String: Any]])
                #expect(listed.count == 5)
                #expect(listed.allSatisfy { $0["token"] == nil && $0["secret_hash"] == nil })
                #expect(!String(buffer: list.body).contains(secret))

                #expect(try await client.send(.delete, "/v1/tokens/\(id)", token: app.admin).status == .noContent)
                let refused = try await client.send(.get, "/v1/items", token: secret)
                #expect(refused.status == .unauthorized)
                #expect(try await client.send(.delete, "/v1/tokens/tok_nope", token: app.admin).status == .notFound)
            }
        }
    }

    @Test(arguments: [#"{"user":"","role":"editor"}"#, #"{"user":"x","role":"root"}"#, #"{"role":"editor"}"#])
    func badTokenRequestsAreRefused(body: String) async throws {
        try await withTestApp { app in
            try await app.test { client in
                let response = try await client.send(.post, "/v1/tokens", token: app.admin, json: body)
                #expect([.badRequest, .unprocessableContent].contains(response.status))
                #expect(["invalidJSON", "validationFailed"].contains(response.errorCode))
            }
        }
    }

    /// `app.database` is another connection pool on the file, as `stockroom token revoke` opens it:
    /// the server learns of the revocation at one of its revocation checks.
    @Test func aTokenRevokedByAnotherProcessIsRefusedOnceTheRevocationWaitHasPassed() async throws {
        try await withTestApp { app in
            try await app.test { client in
                let token = try await app.database.createToken(user: "temp", role: .viewer)
                #expect(try await client.send(.get, "/v1/items", token: token.secret).status == .ok)
                #expect(try await app.database.revokeToken(id: token.info.id))
                try await eventually("the revoked token is refused") {
                    try await client.send(.get, "/v1/items", token: token.secret).status == .unauthorized
                }
            }
        }
    }
}

@Suite("Operations routes")
struct OperationsTests {
    @Test func healthAndReadyAnswerWithoutAToken() async throws {
        try await withTestApp { app in
            try await app.test { client in
                let health = try await client.send(.get, "/health")
                #expect(health.status == .ok)
                #expect(try health.json["status"] as? String == "ok")
                #expect(try await client.send(.get, "/ready").status == .ok)
            }
        }
    }

    @Test func metricsCountRequestsInPrometheusText() async throws {
        try await withTestApp { app in
            try await app.test { client in
                try await client.send(.get, "/v1/items", token: app.viewer)
                let metrics = try await client.send(.get, "/metrics")
                #expect(metrics.status == .ok)
                let text = String(buffer: metrics.body)
                #expect(text.contains("# TYPE hb_requests counter"))
                #expect(text.contains("# TYPE http_server_request_duration histogram"))
                #expect(text.contains("hb_requests{"))
            }
        }
    }

    /// `metrics.access = admin`: the same authenticator as `/v1`; no token 401, a bad one 401, a
    /// viewer 403, an admin reads the metrics.
    @Test func adminOnlyMetricsTakeTheSameBearerChecksAsV1() async throws {
        try await withTestApp { app in
            try await app.test(settings: ["metrics.access": .init(.string("admin"), isSecret: false)]) { client in
                let anonymous = try await client.send(.get, "/metrics")
                #expect(anonymous.status == .unauthorized && anonymous.headers[.wwwAuthenticate] == "Bearer")
                #expect(try await client.send(.get, "/metrics", token: "nope").status == .unauthorized)
                let viewer = try await client.send(.get, "/metrics", token: app.viewer)
                #expect(viewer.status == .forbidden && viewer.errorCode == "forbidden")
                let admin = try await client.send(.get, "/metrics", token: app.admin)
                #expect(admin.status == .ok)
                #expect(String(buffer: admin.body).contains("# TYPE hb_requests counter"))
            }
        }
    }

    @Test func openAPIDocumentIsServedAndNamesEveryRoute() async throws {
        try await withTestApp { app in
            try await app.test { client in
                let response = try await client.send(.get, "/openapi.yaml")
                #expect(response.status == .ok)
                let text = String(buffer: response.body)
                #expect(text.hasPrefix("openapi: 3.2"))
                for path in [
                    "/health:", "/ready:", "/metrics:", "/openapi.yaml:", "/v1/items:", "/v1/items/{id}:", "/v1/tokens:",
                    "/v1/tokens/{id}:", "/v1/clients/{clientID}/navigation:", "/v1/clients/{clientID}/commands:",
                    "/v1/users/me/navigation:",
                ] {
                    #expect(text.contains("\n  \(path)"), "OpenAPI lacks \(path)")
                }
            }
        }
    }
}

@Suite("Method handling")
struct MethodTests {
    @Test func aWrongMethodOnAKnownPathIs405WithAllow() async throws {
        try await withTestApp { app in
            try await app.test { client in
                let patch = try await client.send(.patch, "/v1/items/\(UUID())", token: app.editor)
                #expect(patch.status == .methodNotAllowed)
                #expect(patch.errorCode == "methodNotAllowed")
                #expect(patch.headers[.allow] == "DELETE, GET, PUT")
                let health = try await client.send(.delete, "/health")
                #expect(health.status == .methodNotAllowed)
                #expect(health.headers[.allow] == "GET, HEAD")
                // A literal segment is its own route, as the router matches it: not also /v1/items/{id}.
                let batch = try await client.send(.get, "/v1/items/batch", token: app.editor)
                #expect(batch.status == .methodNotAllowed)
                #expect(batch.headers[.allow] == "POST")
                // Counted under the route's path, as its other answers are, not as an unknown path's.
                let metrics = String(buffer: try await client.send(.get, "/metrics").body)
                #expect(metrics.contains(#"hb_requests{http_route="/v1/items/{id}",http_request_method="PATCH",http_response_status_code="405"}"#))
                #expect(metrics.contains(#"hb_requests{http_route="/v1/items/batch",http_request_method="GET",http_response_status_code="405"}"#))
                #expect(!metrics.contains(#"http_route="NotFound",http_request_method="PATCH""#))
            }
        }
    }
}
