import HTTPTypes
import Synchronization

/// The router's routes, recorded once they are all added, to tell a wrong method from a wrong path.
final class RouteTable: Sendable {
    private let entries = Mutex<[(path: String, components: [Substring], method: HTTPRequest.Method)]>([])

    /// Records the router's routes (`/v1/items/{id}` style paths).
    func record(_ routes: [(path: String, method: HTTPRequest.Method)]) {
        entries.withLock { $0 = routes.map { ($0.path, Self.components($0.path), $0.method) } }
    }

    /// The route of `path` (`/v1/items/{id}`, as the router writes it) and the methods it answers
    /// to, in a stable order; nil when no route has that path. As the router does, a literal
    /// segment wins over a parameter: `/v1/items/batch` is that route's alone (POST), not also
    /// `/v1/items/{id}`'s, whose methods the router never reaches for it.
    func route(forPath path: String) -> (path: String, methods: [HTTPRequest.Method])? {
        let requested = Self.components(path)
        let matching = entries.withLock { entries in
            entries.filter { entry in
                entry.components.count == requested.count
                    && zip(entry.components, requested).allSatisfy { pattern, part in pattern.hasPrefix("{") || pattern == part }
            }
        }
        // Literal positions as a string of 1s and 0s: the greatest is the most specific pattern.
        func specificity(_ components: [Substring]) -> String { String(components.map { $0.hasPrefix("{") ? "0" : "1" }) }
        guard let best = matching.map({ specificity($0.components) }).max() else { return nil }
        let routes = matching.filter { specificity($0.components) == best }
        let methods = Array(Set(routes.map(\.method.rawValue))).sorted().compactMap { HTTPRequest.Method($0) }
        return (routes[0].path, methods)
    }

    private static func components(_ path: String) -> [Substring] {
        path.split(separator: "/", omittingEmptySubsequences: true)
    }
}
