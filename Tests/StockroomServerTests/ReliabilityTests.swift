import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import StockroomCore
import StockroomServer
import StockroomStore
import Testing

@Suite("Readiness, shutdown and limits")
struct ReliabilityTests {
    /// A full database (capped with `max_page_count`, as a full disk would cap it): `/ready` says
    /// 503 with the reason while writes fail, and 200 again once space returns, without a restart.
    @Test(.timeLimit(.minutes(1)))
    func readyFollowsWhetherAWriteWouldSucceed() async throws {
        try await withTestApp { app in
            // The migrated schema takes a few dozen pages; the items fill the rest.
            let database = try AppDatabase.open(path: app.databasePath, maxPageCount: 120)
            let settings = try Settings(reader: app.reader())
            let server = buildApplication(settings: settings, database: database, logger: Logger(label: "test"))
            try await server.test(.router) { client in
                #expect(try await client.send(.get, "/ready").status == .ok)

                var refused: TestResponse?
                for index in 0..<5000 {
                    let name = String(repeating: "x", count: 190) + "\(index)"
                    let response = try await client.send(.post, "/v1/items", token: app.editor, json: draftJSON(name: name, color: "Blue"))
                    if response.status != .created {
                        refused = response
                        break
                    }
                }
                let full = try #require(refused, "the capped database never filled up")
                #expect(full.status == .serviceUnavailable)
                #expect(full.errorCode == "unavailable")

                let notReady = try await Self.ready(client, until: .serviceUnavailable)
                #expect(notReady.errorCode == "unavailable")
                #expect(notReady.headers[.retryAfter] != nil)
                let message = ((try notReady.json["error"] as? [String: Any])?["message"] as? String) ?? ""
                #expect(message.contains("full"), "\(message)")

                // Space returns: the change log is trimmed (the items stay).
                #expect(try await database.trimChanges(maxAge: .seconds(3600), maxEntries: 1) > 0)
                _ = try await Self.ready(client, until: .ok)
                #expect(try await client.send(.post, "/v1/items", token: app.editor, json: draftJSON(name: "After")).status == .created)
            }
        }
    }

    /// Asks `/ready` until it answers `status` (its probe result is cached for a second).
    static func ready(_ client: some TestClientProtocol, until status: HTTPResponse.Status) async throws -> TestResponse {
        let deadline = ContinuousClock.now + .seconds(20)
        while true {
            let response = try await client.send(.get, "/ready")
            if response.status == status { return response }
            try #require(ContinuousClock.now < deadline, "/ready still answers \(response.status), not \(status)")
            try await Task.sleep(for: .milliseconds(100))
        }
    }
}
