import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOEmbedded
import Testing

@testable import StockroomServer

/// `FastRoutes`: the routes answered without the router's trie answer every request exactly as the
/// trie does, and take the paths they should.
@Suite("Routes answered without the trie")
struct FastRoutesTests {
    static func request(_ method: HTTPRequest.Method, _ path: String) -> Request {
        Request(head: .init(method: method, scheme: nil, authority: "example.com", path: path), body: .init(buffer: ByteBuffer()))
    }

    static func context() -> BasicRequestContext {
        BasicRequestContext(source: ApplicationRequestContextSource(channel: EmbeddedChannel(), logger: Logger(label: "test")))
    }

    /// A router whose every handler answers with its route, method and parameters, built through a
    /// `RouteRecorder` with `routes` (method, path) under a group `v1` with a middleware.
    static func echo(_ routes: [(HTTPRequest.Method, RouterPath)]) -> (RouterResponder<BasicRequestContext>, FastRoutes<BasicRequestContext>) {
        let (router, fast) = recorded(routes)
        return (router.buildResponder(), fast)
    }

    /// `echo`'s router, not built (a debug build's router refuses clashing routes when it builds).
    static func recorded(_ routes: [(HTTPRequest.Method, RouterPath)]) -> (Router<BasicRequestContext>, FastRoutes<BasicRequestContext>) {
        let router = Router(context: BasicRequestContext.self)
        router.add(middleware: Tag("outer"))
        let recorder = RouteRecorder(router)
        let v1 = recorder.group("v1").add(middleware: Tag("v1"))
        for (method, path) in routes {
            v1.on(path, method: method) { request, context -> String in
                let parameters = context.parameters.map { "\($0.key)=\($0.value)" }.sorted().joined(separator: ",")
                return "\(request.method) \(context.endpointPath ?? "-") [\(parameters)]"
            }
        }
        return (router, recorder.fastRoutes())
    }

    /// Adds its name to the answer's `X-Tags`, to show that a route's middleware ran, and in which order.
    struct Tag: RouterMiddleware {
        typealias Context = BasicRequestContext
        let name: String
        init(_ name: String) { self.name = name }
        func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
            var response = try await next(request, context)
            let tags = response.headers[Self.field].map { $0 + "<" } ?? ""
            response.headers[Self.field] = tags + name
            return response
        }
        static let field = HTTPField.Name("X-Tags")!
    }

    /// The answer's status and body through `responder`.
    static func answer(_ responder: some HTTPResponder<BasicRequestContext>, _ method: HTTPRequest.Method, _ path: String) async -> String {
        do {
            let response = try await responder.respond(to: request(method, path), context: context())
            let box = TextBox()
            try await response.body.write(Collector(box: box))
            return "\(response.status.code) \(box.text) \(response.headers[Tag.field] ?? "-")"
        } catch let error as any HTTPResponseError {
            return "\(error.status.code) (error)"
        } catch {
            return "error \(error)"
        }
    }

    final class TextBox: @unchecked Sendable {
        // Written while a body is written, read once it is: never at once.
        var text = ""
    }

    struct Collector: ResponseBodyWriter {
        let box: TextBox
        mutating func write(_ buffer: ByteBuffer) async throws { box.text += String(buffer: buffer) }
        consuming func finish(_ trailingHeaders: HTTPFields?) async throws {}
    }

    static let appShapes: [(HTTPRequest.Method, RouterPath)] = [
        (.get, "items"), (.post, "items"), (.get, "items/:id"), (.put, "items/:id"), (.delete, "items/:id"),
        (.post, "items/batch"), (.post, "items/import"), (.get, "clients/:clientID/navigation"),
        (.put, "clients/:clientID/navigation"), (.post, "clients/:clientID/commands"), (.get, "users/me/navigation"),
        (.get, "users/me"), (.delete, "tokens/:id"), (.get, "tokens"),
    ]

    static let paths = [
        "/v1/items/abc", "/v1/items/3b9cae79-8edb-454f-984b-3139c68c24f7", "/v1/items/batch", "/v1/items/import", "/v1/items",
        "/v1/items/", "/v1/items//abc", "/v1//items/abc", "//v1/items/abc", "/v1/items/abc/", "/v1/items/abc/def", "/v1/items/%2F",
        "/v1/items/caf%C3%A9", "/v1/items/café", "/v1/clients/c1/commands", "/v1/clients/c1/navigation", "/v1/clients/c1",
        "/v1/clients/c1/other", "/v1/users/me", "/v1/users/me/navigation", "/v1/users/x/navigation", "/v1/tokens/t1", "/v1/tokens",
        "/v2/items/abc", "/V1/items/abc", "/v1/ITEMS/abc", "/", "", "v1/items/abc",
    ]
    static let methods: [HTTPRequest.Method] = [.get, .put, .post, .delete, .patch, .head]

    @Test func everyPathAndMethodIsAnsweredAsTheTrieAnswersIt() async throws {
        let (router, fast) = Self.echo(Self.appShapes)
        let responder = FastRoutesResponder(fast: fast, router: router)
        var answeredHere = 0
        for path in Self.paths {
            for method in Self.methods {
                if fast.match(path, method: method) != nil { answeredHere += 1 }
                let expected = await Self.answer(router, method, path)
                let actual = await Self.answer(responder, method, path)
                #expect(actual == expected, "\(method) \(path)")
            }
        }
        // Not vacuous: the table took the paths it is for, and answers carry the route, its
        // parameter and both middlewares, in order.
        #expect(answeredHere >= 10)
        #expect(await Self.answer(responder, .get, "/v1/items/abc") == "200 GET /v1/items/{id} [id=abc] v1<outer")
        #expect(await Self.answer(responder, .post, "/v1/clients/c1/commands") == "200 POST /v1/clients/{clientID}/commands [clientID=c1] v1<outer")
    }

    @Test func theTableTakesOneCaptureRoutesAndLeavesTheRestToTheTrie() throws {
        let (_, fast) = Self.echo(Self.appShapes)
        #expect(Set(fast.routes.map(\.endpoint)) == ["/v1/items/{id}", "/v1/clients/{clientID}/navigation", "/v1/clients/{clientID}/commands", "/v1/tokens/{id}"])
        let items = try #require(fast.match("/v1/items/abc", method: .get))
        #expect(items.route.endpoint == "/v1/items/{id}")
        #expect(items.capture == "abc")
        #expect(fast.match("/v1/items/abc", method: .put)?.capture == "abc")
        #expect(fast.match("/v1/clients/c1/commands", method: .post)?.capture == "c1")
        #expect(fast.match("/v1/items/café", method: .get)?.capture == "café")
        // Constants beside the capture, other methods, empty segments: the trie's.
        #expect(fast.match("/v1/items/batch", method: .get) == nil)
        #expect(fast.match("/v1/items/import", method: .post) == nil)
        #expect(fast.match("/v1/items/abc", method: .patch) == nil)
        #expect(fast.match("/v1/items/abc/", method: .get) == nil)
        #expect(fast.match("/v1//items/abc", method: .get) == nil)
        #expect(fast.match("/v1/items", method: .get) == nil)
    }

    @Test func aRouteThatAnotherCouldShadowIsLeftToTheTrie() throws {
        // A capture beside the capture, a wildcard, or `**` anywhere: no fast route for those paths.
        let (_, shadowed) = Self.recorded([(.get, "items/:id"), (.get, "items/:name"), (.get, "clients/:id/x"), (.get, "clients/*/x")])
        #expect(shadowed.routes.isEmpty)
        let (_, recursive) = Self.recorded([(.get, "items/:id"), (.get, "files/**")])
        #expect(recursive.routes.isEmpty)
        // The same capture continued by a longer route is the same node: still taken.
        let (_, longer) = Self.recorded([(.get, "items/:id"), (.get, "items/:id/history")])
        #expect(Set(longer.routes.map(\.endpoint)) == ["/v1/items/{id}", "/v1/items/{id}/history"])
        #expect(longer.match("/v1/items/abc", method: .get)?.route.endpoint == "/v1/items/{id}")
    }

    @Test func theAppsOwnItemAndCommandRoutesAreAnsweredWithoutTheTrie() async throws {
        try await withTestApp { app in
            let settings = try Settings(reader: app.reader())
            let (_, fast) = buildRoutes(database: app.database, settings: settings, streams: FeedStreams(settings: settings.feed))
            for (method, path, endpoint) in [
                (HTTPRequest.Method.get, "/v1/items/3b9cae79-8edb-454f-984b-3139c68c24f7", "/v1/items/{id}"),
                (.put, "/v1/items/3b9cae79-8edb-454f-984b-3139c68c24f7", "/v1/items/{id}"),
                (.delete, "/v1/items/3b9cae79-8edb-454f-984b-3139c68c24f7", "/v1/items/{id}"),
                (.post, "/v1/clients/phone/commands", "/v1/clients/{clientID}/commands"),
            ] {
                #expect(fast.match(path, method: method)?.route.endpoint == endpoint, "\(method) \(path)")
            }
            #expect(fast.match("/v1/items/batch", method: .post) == nil)
            #expect(fast.match("/v1/items/import", method: .post) == nil)
        }
    }
}
