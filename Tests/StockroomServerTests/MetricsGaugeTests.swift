import AsyncHTTPClient
import Configuration
import Foundation
import Hummingbird
import HummingbirdTesting
import HummingbirdWSClient
import Logging
import StockroomCore
import Testing

/// Gauges come back down once streams end (issue #14, point 8).
@Suite("Metrics gauges after streams")
struct MetricsGaugeTests {
    static func gauge(_ server: LiveServer, _ prefix: String) async throws -> Double {
        let text = String(decoding: try await server.request(.GET, "/metrics", token: nil).body, as: UTF8.self)
        return text.split(separator: "\n").filter { $0.hasPrefix(prefix) }
            .compactMap { $0.split(separator: " ").last.flatMap { Double($0) } }.reduce(0, +)
    }

    /// Each WebSocket used to leave `http_server_active_requests` one higher for good. The
    /// registry is process-wide and other suites run meanwhile, so the check is on the rise after
    /// 50 closed WebSockets (50 before the fix), not on an exact value.
    @Test func closedWebSocketsAndStreamsLeaveNoActiveRequestBehind() async throws {
        try await withTestApp { app in
            try await app.live { client in
                let server = LiveServer(port: try #require(client.port))
                let before = try await Self.gauge(server, "http_server_active_requests")
                for _ in 0..<50 {
                    _ = try await WebSocketClient.connect(
                        url: "ws://127.0.0.1:\(server.port)/v1/changes/ws?since=now&access_token=\(app.viewer)", logger: Logger(label: "test")
                    ) { _, outbound, _ in
                        try await outbound.close(.normalClosure, reason: nil)
                    }
                }
                let token = try await app.database.createToken(user: "vic", role: .viewer)
                let reader = try await SSEReader(server: server, token: token.secret, query: "since=now")
                _ = try await server.request(.DELETE, "/v1/tokens/\(token.info.id)", token: app.admin)
                while try await reader.next() != nil {}
                let after = try await Self.gauge(server, "http_server_active_requests")
                #expect(after - before < 25, "before \(before), after \(after)")
                // Counted all the same, as accepted upgrades.
                let metrics = String(decoding: try await server.request(.GET, "/metrics", token: nil).body, as: UTF8.self)
                #expect(metrics.contains(#"hb_requests{http_route="/v1/changes/ws",http_request_method="GET",http_response_status_code="101"}"#))
            }
        }
    }

    /// `hb_request_errors` counts the answers of status 400 or more, by route, method and status, and
    /// has no series for others. It had one at 0 for every route and status answered,
    /// `error_type="200"` among them, and counted nothing: the errors it waited for were answers by then.
    @Test func errorSeriesAreOnlyThoseOfErrors() async throws {
        try await withTestApp { app in
            try await app.live { client in
                let server = LiveServer(port: try #require(client.port))
                _ = try await server.request(.GET, "/health", token: nil)
                _ = try await server.request(.GET, "/v1/items?limit=1", token: app.viewer)
                let missing = #"hb_request_errors{http_route="/v1/items/{id}",http_request_method="GET",error_type="404"}"#
                let before = try await Self.gauge(server, missing)
                for _ in 0..<3 {
                    #expect(try await server.request(.GET, "/v1/items/\(ItemID.random())", token: app.viewer).status == 404)
                }
                #expect(try await Self.gauge(server, missing) >= before + 3, "other suites may count theirs meanwhile, never fewer")
                let text = String(decoding: try await server.request(.GET, "/metrics", token: nil).body, as: UTF8.self)
                let errors = text.split(separator: "\n").filter { $0.hasPrefix("hb_request_errors{") }
                let notErrors = errors.filter { $0.contains(#"error_type="2"#) || $0.contains(#"error_type="3"#) }
                #expect(notErrors.isEmpty, "\(notErrors)")
            }
        }
    }

    @Test func metricsCanBeKeptForAdmins() async throws {
        try await withTestApp { app in
            try await app.test(settings: ["metrics.access": .init(.string("admin"), isSecret: false)]) { (client: any TestClientProtocol) async throws in
                #expect(try await client.send(.get, "/metrics").status == .unauthorized)
                #expect(try await client.send(.get, "/metrics", token: app.editor).status == .forbidden)
                #expect(try await client.send(.get, "/metrics", token: app.admin).status == .ok)
                #expect(try await client.send(.get, "/health").status == .ok)
            }
            try await app.test { (client: any TestClientProtocol) async throws in
                #expect(try await client.send(.get, "/metrics").status == .ok, "public by default, as the contract says")
            }
        }
    }
}
