import HTTPTypes
import Testing

/// A query parameter given twice has no one value: which the client meant cannot be told (a list
/// sent as `topics=items&topics=navigation` would otherwise follow items alone), so the request is
/// `400 invalidParameter` naming it, and nothing is read or written.
@Suite("A repeated query parameter")
struct RepeatedQueryParameterTests {
    @Test(arguments: [
        (HTTPRequest.Method.get, "/v1/items?limit=1&limit=2", "limit"),
        (.get, "/v1/items?q=mug&q=cup", "q"),
        (.get, "/v1/items?status=inStock&status=inStock", "status"),
        (.get, "/v1/items?after=x&after=y", "after"),
        (.get, "/v1/changes?topics=items&topics=navigation", "topics"),
        (.get, "/v1/changes?since=now&since=now", "since"),
        (.get, "/v1/changes?limit=1&wait=0&limit=2", "limit"),
        (.get, "/v1/changes?filter=name+%3D+%22a%22&filter=name+%3D+%22b%22", "filter"),
        (.get, "/v1/changes/stream?clientID=ios-1&clientID=ios-2", "clientID"),
        (.get, "/v1/snapshot?fromFilter=x&filter=y&fromFilter=x", "fromFilter"),
        (.get, "/v1/items/export?filter=a&filter=b", "filter"),
        (.post, "/v1/items/import?dryRun=true&dryRun=false", "dryRun"),
    ])
    func isRefusedNamingIt(method: HTTPRequest.Method, path: String, name: String) async throws {
        try await withTestApp { app in
            try await app.test { client in
                let response = try await client.send(
                    method, path, token: app.admin, json: method == .post ? "name,quantity\nMug,1\n" : nil,
                    headers: method == .post ? [.contentType: "text/csv"] : [:])
                #expect(response.status == .badRequest, "\(path)")
                #expect(response.errorCode == "invalidParameter" && response.errorField == name, "\(path)")
                let items = try await client.send(.get, "/v1/items", token: app.viewer)
                #expect(try items.json["items"] as? [Any] != nil && (try items.json["items"] as? [Any])?.isEmpty == true, "nothing written")
            }
        }
    }

    /// The token as a query parameter, given twice, is refused as any repeated parameter is, not
    /// read as no token.
    @Test func aRepeatedAccessTokenIs400() async throws {
        try await withTestApp { app in
            try await app.test { client in
                let response = try await client.send(.get, "/v1/changes/stream?access_token=\(app.viewer)&access_token=\(app.viewer)")
                #expect(response.status == .badRequest && response.errorCode == "invalidParameter" && response.errorField == "access_token")
            }
        }
    }
}
