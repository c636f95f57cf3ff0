import HTTPTypes
import Hummingbird

/// The routes that answer without the router's trie: each route added through a `RouteRecorder`
/// whose path is constants and exactly one capture (`/v1/items/{id}`,
/// `/v1/clients/{clientID}/commands`), with the very responder the router stores for it.
///
/// Why: Hummingbird's trie splits the request's path by `Character`, a grapheme at a time, which
/// makes finding `/v1/items/{id}` a large part of a GET's work (Benchmarks/README, "Routes found by
/// the path's bytes"). Here the path's bytes are compared with the route's constants.
///
/// A path is answered here only where the trie would pick the same route: the path is canonical
/// (no empty segment), no other route can match it, and the method is one the route has. A route
/// is left to the trie when another route could match the same paths with something other than a
/// constant where it captures (a capture, a wildcard), or has `**` anywhere; a constant another
/// route has at the capture's position (`/v1/items/batch`) is excluded, and such paths go to the
/// trie. Everything else goes to the trie unchanged.
struct FastRoutes<Context: RequestContext>: Sendable {
    let table: FastRouteTable
    /// Each route's responders, in `table.routes`' order.
    let responders: [[HTTPRequest.Method: any HTTPResponder<Context>]]

    var routes: [FastRouteTable.Route] { table.routes }

    /// The route, its responder for `method` and the capture, when this table answers `path`.
    func match(_ path: String, method: HTTPRequest.Method) -> (route: FastRouteTable.Route, responder: any HTTPResponder<Context>, capture: Substring)? {
        guard let (index, capture) = table.match(path), let responder = responders[index][method] else { return nil }
        return (table.routes[index], responder, capture)
    }
}

/// `FastRoutes`' paths, compared as bytes (not generic over the context, so that it runs
/// specialized whatever calls it).
struct FastRouteTable: Sendable {
    struct Route: Sendable {
        /// The path's segments: a constant's bytes, or nil for the capture.
        let segments: [[UInt8]?]
        let parameter: Substring
        /// The route's path as the router writes it (`context.endpointPath`: `/v1/items/{id}`).
        let endpoint: String
        /// Constants other routes have at the capture's position: those paths go to the trie.
        let excluded: [[UInt8]]

        /// The capture's byte range when `bytes` (a path) is this route's, segment for segment.
        func capture(in bytes: UnsafeBufferPointer<UInt8>) -> Range<Int>? {
            guard bytes.first == UInt8(ascii: "/") else { return nil }
            var start = 1
            var capture: Range<Int>?
            var index = 0
            while index < segments.count {
                var end = start
                while end < bytes.count, bytes[end] != UInt8(ascii: "/") { end += 1 }
                // An empty segment ("//", a trailing "/"): the trie's business.
                guard end > start else { return nil }
                if let segment = segments[index] {
                    guard end - start == segment.count, UnsafeBufferPointer(rebasing: bytes[start..<end]).elementsEqual(segment) else { return nil }
                } else {
                    capture = start..<end
                }
                if index == segments.count - 1 {
                    guard end == bytes.count else { return nil }
                } else {
                    guard end < bytes.count else { return nil }
                }
                start = end + 1
                index += 1
            }
            return capture
        }
    }

    let routes: [Route]

    /// The index of the route `path` is, and its capture. No two routes of the table match one
    /// path: where two routes could, each excludes the other's constant, or neither is taken
    /// (`RouteRecorder.fastRoutes`).
    func match(_ path: String) -> (index: Int, capture: Substring)? {
        guard !routes.isEmpty else { return nil }
        var path = path
        let found: (index: Int, capture: Range<Int>)? = path.withUTF8 { bytes in
            for index in routes.indices {
                guard let capture = routes[index].capture(in: bytes) else { continue }
                let part = UnsafeBufferPointer(rebasing: bytes[capture])
                if routes[index].excluded.contains(where: { part.elementsEqual($0) }) { return nil }
                return (index, capture)
            }
            return nil
        }
        guard let found else { return nil }
        let utf8 = path.utf8
        let lower = utf8.index(utf8.startIndex, offsetBy: found.capture.lowerBound)
        let upper = utf8.index(lower, offsetBy: found.capture.count)
        return (found.index, path[lower..<upper])
    }
}

/// The router's responder, with `FastRoutes` answered first.
struct FastRoutesResponder<Context: RequestContext>: HTTPResponder {
    let fast: FastRoutes<Context>
    let router: RouterResponder<Context>

    @Sendable func respond(to request: Request, context: Context) async throws -> Response {
        guard let (route, responder, capture) = fast.match(request.uri.path, method: request.method) else {
            return try await router.respond(to: request, context: context)
        }
        // What `RouterResponder` does once its trie found the route.
        let routed = Self.context(context, route: route, capture: capture)
        do {
            return try await responder.respond(to: request, context: routed)
        } catch let error as any HTTPResponseError {
            return try error.response(from: request, context: context)
        }
    }

    /// The route's context: its parameter and endpoint set. Out of line, so that its temporaries
    /// stay out of `respond`'s async frame, which every request allocates.
    @inline(never)
    private static func context(_ context: Context, route: FastRouteTable.Route, capture: Substring) -> Context {
        var context = context
        var parameters = Parameters()
        parameters[route.parameter] = capture
        context.coreContext.parameters = parameters
        context.coreContext.endpointPath.value = route.endpoint
        return context
    }
}

/// The root routes are added through: each goes to the router as it would, and those
/// `FastRoutes` can answer are also kept with the responder the router composes for them (its
/// middleware around the one given, as `Router.on` does).
final class RouteRecorder<Context: RequestContext>: RouterMethods, @unchecked Sendable {
    // @unchecked: routes are added while the router is built, on one task, before it serves.
    let router: Router<Context>
    private var candidates: [(path: RouterPath, method: HTTPRequest.Method, responder: any HTTPResponder<Context>)] = []

    init(_ router: Router<Context>) {
        self.router = router
    }

    @discardableResult func on<Responder: HTTPResponder>(
        _ path: RouterPath, method: HTTPRequest.Method, responder: Responder
    ) -> Self where Responder.Context == Context {
        router.on(path, method: method, responder: responder)
        if Self.segments(of: path) != nil {
            candidates.append((path, method, router.middlewares.constructResponder(finalResponder: responder)))
        }
        return self
    }

    @discardableResult func add(middleware: any MiddlewareProtocol<Request, Response, Context>) -> Self {
        router.add(middleware: middleware)
        return self
    }

    /// The table, once every route of the router is added.
    func fastRoutes() -> FastRoutes<Context> {
        let all = router.routes.map { (path: $0.path, elements: Self.elements(of: $0.path)) }
        var byPath: [String: (path: RouterPath, responders: [HTTPRequest.Method: any HTTPResponder<Context>])] = [:]
        for candidate in candidates {
            byPath[candidate.path.description, default: (candidate.path, [:])].responders[candidate.method] = candidate.responder
        }
        var routes: [FastRouteTable.Route] = []
        var responders: [[HTTPRequest.Method: any HTTPResponder<Context>]] = []
        for (endpoint, entry) in byPath.sorted(by: { $0.key < $1.key }) {
            guard let (segments, parameter) = Self.segments(of: entry.path), let position = segments.firstIndex(where: { $0 == nil }) else { continue }
            var excluded: [[UInt8]] = []
            var eligible = true
            for other in all where other.path.description != endpoint {
                if other.elements.contains(where: { if case .recursiveWildcard = $0 { true } else { false } }) {
                    eligible = false
                    break
                }
                // A path of this route's length reaches the other's node at that depth.
                guard other.elements.count >= segments.count else { continue }
                let prefix = other.elements.prefix(segments.count)
                // The same node (this route's constants and capture): the other route only continues it.
                if zip(prefix, segments).allSatisfy({ element, segment in
                    switch element {
                    case .constant(let bytes): return bytes == segment
                    case .capture(let name): return segment == nil && name == parameter
                    default: return false
                    }
                }) {
                    continue
                }
                let elsewhereCompatible = zip(prefix, segments).enumerated().allSatisfy { index, pair in
                    guard index != position, case .constant(let bytes) = pair.0 else { return true }
                    return bytes == pair.1
                }
                guard elsewhereCompatible else { continue }
                if case .constant(let bytes) = prefix[prefix.startIndex + position] {
                    if !excluded.contains(bytes) { excluded.append(bytes) }
                } else {
                    eligible = false
                    break
                }
            }
            if eligible {
                routes.append(.init(segments: segments, parameter: parameter, endpoint: endpoint, excluded: excluded))
                responders.append(entry.responders)
            }
        }
        return FastRoutes(table: FastRouteTable(routes: routes), responders: responders)
    }

    enum Element {
        case constant([UInt8])
        case capture(Substring)
        case recursiveWildcard
        /// A wildcard or a partial capture: may match any segment.
        case other
    }

    static func elements(of path: RouterPath) -> [Element] {
        path.components.map { element in
            let text = element.description
            if element == .path(Substring(text)) { return .constant(Array(text.utf8)) }
            if text.hasPrefix("{"), text.hasSuffix("}"), element == .capture(text.dropFirst().dropLast()) {
                return .capture(text.dropFirst().dropLast())
            }
            if element == .recursiveWildcard { return .recursiveWildcard }
            return .other
        }
    }

    /// A path of constants and exactly one capture, as `FastRouteTable.Route.segments` and the capture's name.
    static func segments(of path: RouterPath) -> (segments: [[UInt8]?], parameter: Substring)? {
        var parameter: Substring?
        var segments: [[UInt8]?] = []
        for element in elements(of: path) {
            switch element {
            case .constant(let bytes) where !bytes.isEmpty && !bytes.contains(UInt8(ascii: "/")):
                segments.append(bytes)
            case .capture(let name) where parameter == nil:
                parameter = name
                segments.append(nil)
            default:
                return nil
            }
        }
        guard let parameter else { return nil }
        return (segments, parameter)
    }
}
