import Foundation
import HTTPTypes
import HummingbirdTesting
import Testing

@testable import StockroomServer

@Suite("The inspector's files, served by the binary")
struct InspectorRouteTests {
    @Test(arguments: [
        ("/", "text/html; charset=utf-8", #"<a href="/inspector">"#),
        ("/inspector", "text/html; charset=utf-8", #"<script src="/inspector/inspector.js" defer></script>"#),
        ("/inspector/core.js", "text/javascript; charset=utf-8", "const Inspector = {};"),
        ("/inspector/api.js", "text/javascript; charset=utf-8", "async function api("),
        ("/inspector/items.js", "text/javascript; charset=utf-8", "function renderItems("),
        ("/inspector/presence.js", "text/javascript; charset=utf-8", "function presenceBadge("),
        ("/inspector/devices.js", "text/javascript; charset=utf-8", "function renderCard("),
        ("/inspector/feed.js", "text/javascript; charset=utf-8", "new EventSource("),
        ("/inspector/transfer.js", "text/javascript; charset=utf-8", "async function runImport("),
        ("/inspector/inspector.js", "text/javascript; charset=utf-8", #"document.addEventListener("DOMContentLoaded""#),
        ("/inspector/inspector.css", "text/css; charset=utf-8", "@media (max-width: 40rem)"),
        ("/inspector/icon.svg", "image/svg+xml", "<svg"),
    ])
    func eachFileIsServedWithoutATokenUnderAStrictContentSecurityPolicy(path: String, contentType: String, contains: String) async throws {
        try await withTestApp { app in
            try await app.test { client in
                let response = try await client.send(.get, path)
                #expect(response.status == .ok)
                #expect(response.headers[.contentType] == contentType)
                #expect(response.headers[.contentSecurityPolicy] == InspectorController.contentSecurityPolicy)
                #expect(response.headers[HTTPField.Name("X-Content-Type-Options")!] == "nosniff")
                #expect(String(buffer: response.body).contains(contains))
            }
        }
    }

    @Test func usersMeTellsEachTokenItsUserAndRole() async throws {
        try await withTestApp { app in
            try await app.test { client in
                for (token, user, role) in [(app.viewer, "vera", "viewer"), (app.editor, "erin", "editor"), (app.admin, "ada", "admin")] {
                    let response = try await client.send(.get, "/v1/users/me", token: token)
                    #expect(response.status == .ok)
                    let body = try response.json
                    #expect(body["user"] as? String == user && body["role"] as? String == role)
                    #expect((body["tokenID"] as? String)?.isEmpty == false)
                    #expect(!String(buffer: response.body).contains(token), "never the secret")
                }
                let anonymous = try await client.send(.get, "/v1/users/me")
                #expect(anonymous.status == .unauthorized && anonymous.errorCode == "unauthorized")
            }
        }
    }

    @Test func thePolicyAllowsThisServerOnlyAndNoInlineCode() {
        let directives = Dictionary(uniqueKeysWithValues: InspectorController.contentSecurityPolicy.split(separator: ";").map { part in
            let words = part.split(separator: " ").map(String.init)
            return (words[0], Array(words.dropFirst()))
        })
        #expect(directives["default-src"] == ["'none'"])
        for directive in ["script-src", "style-src", "connect-src", "img-src"] {
            #expect(directives[directive] == ["'self'"], "\(directive)")
        }
        #expect(directives["frame-ancestors"] == ["'none'"])
    }

    @Test func thePageLoadsNothingButItsOwnFiles() throws {
        let resources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources/StockroomServer/Resources/inspector")
        for name in [
            "index.html", "home.html", "core.js", "api.js", "items.js", "presence.js", "devices.js", "feed.js", "transfer.js",
            "inspector.js", "inspector.css", "icon.svg",
        ] {
            let text = try String(contentsOf: resources.appendingPathComponent(name), encoding: .utf8)
            // (The SVG namespace is a name, not a fetch.)
            let checked = text.replacingOccurrences(of: "http://www.w3.org/2000/svg", with: "")
            #expect(!checked.contains("http://") && !checked.contains("https://") && !checked.contains("//cdn"), "\(name) names no other host")
            #expect(!text.contains("style=\""), "\(name) has no inline style attribute (the policy would block it)")
        }
        let page = try String(contentsOf: resources.appendingPathComponent("index.html"), encoding: .utf8)
        #expect(!page.contains("<script>") && !page.contains("<style>"), "no inline script or style")
    }
}
