import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// `/` and `/inspector`: the inspector page and its files (scripts, stylesheet, icon), served from the binary's resources,
/// open without a token (the page asks for one), for `GET` and `HEAD`. Every answer forbids loading
/// anything from anywhere else.
struct InspectorController {
    /// A file the controller serves.
    struct Asset: Sendable {
        let bytes: ByteBuffer
        let contentType: String
    }

    /// Only what this server serves: the page's own scripts and stylesheet, and its API over
    /// `fetch` and `EventSource`; no inline script or style, no frames, no form posts elsewhere.
    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
        + "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

    /// The files, read from the resource bundle once, on first use.
    static let assets: Result<[String: Asset], any Error> = Result {
        func load(_ name: String, _ ext: String, _ contentType: String) throws -> Asset {
            guard let url = Bundle.module.url(forResource: name, withExtension: ext, subdirectory: "Resources/inspector") else {
                throw CocoaError(.fileNoSuchFile)
            }
            return Asset(bytes: ByteBuffer(data: try Data(contentsOf: url)), contentType: contentType)
        }
        return [
            "/": try load("home", "html", "text/html; charset=utf-8"),
            "/inspector": try load("index", "html", "text/html; charset=utf-8"),
            "/inspector/core.js": try load("core", "js", "text/javascript; charset=utf-8"),
            "/inspector/api.js": try load("api", "js", "text/javascript; charset=utf-8"),
            "/inspector/items.js": try load("items", "js", "text/javascript; charset=utf-8"),
            "/inspector/presence.js": try load("presence", "js", "text/javascript; charset=utf-8"),
            "/inspector/devices.js": try load("devices", "js", "text/javascript; charset=utf-8"),
            "/inspector/feed.js": try load("feed", "js", "text/javascript; charset=utf-8"),
            "/inspector/transfer.js": try load("transfer", "js", "text/javascript; charset=utf-8"),
            "/inspector/inspector.js": try load("inspector", "js", "text/javascript; charset=utf-8"),
            "/inspector/inspector.css": try load("inspector", "css", "text/css; charset=utf-8"),
            "/inspector/icon.svg": try load("icon", "svg", "image/svg+xml"),
        ]
    }

    func addRoutes(to router: Router<AppRequestContext>) {
        for path in [
            "/", "/inspector", "/inspector/core.js", "/inspector/api.js", "/inspector/items.js", "/inspector/presence.js",
            "/inspector/devices.js", "/inspector/feed.js", "/inspector/transfer.js", "/inspector/inspector.js", "/inspector/inspector.css",
            "/inspector/icon.svg",
        ] {
            router.getAndHead(RouterPath(path)) { _, _ in
                guard let asset = try Self.assets.get()[path] else { throw CocoaError(.fileNoSuchFile) }
                return Self.response(asset)
            }
        }
    }

    static func response(_ asset: Asset) -> Response {
        Response(
            status: .ok,
            headers: [
                .contentType: asset.contentType,
                .contentSecurityPolicy: contentSecurityPolicy,
                HTTPField.Name("X-Content-Type-Options")!: "nosniff",
                HTTPField.Name("Referrer-Policy")!: "no-referrer",
                .cacheControl: "no-cache",
            ],
            body: .init(byteBuffer: asset.bytes))
    }
}
