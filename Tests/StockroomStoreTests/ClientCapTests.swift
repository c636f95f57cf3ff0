import Foundation
import StockroomCore
import Testing

import StockroomStorage
@testable import StockroomStore

/// A user cannot create devices without bound (issue #14, point 9).
@Suite("Clients per user")
struct ClientCapTests {
    @Test func aNewClientBeyondTheCapIs422AndExistingOnesKeepWorking() async throws {
        try await withTemporaryDatabase { opened in
            var database = opened
            database.limits = StoreLimits(clientsPerUser: 3)
            for index in 0..<3 {
                let device = ClientID("d\(index)")!
                _ = try await database.runCommand(.openAdd, clientID: device, origin: Sample.erin(device))
            }
            let refusal = DomainError.validationFailed(field: "clientID", message: "a user may have at most 3 clients (devices)")
            #expect(await failure { try await database.runCommand(.openAdd, clientID: "d3", origin: Sample.erin("d3")) } == .domain(refusal))
            #expect(
                await failure {
                    try await database.replaceNavigation(clientID: "d4", state: .root, precondition: nil, origin: Sample.erin("d4"))
                } == .domain(refusal))
            #expect(try await database.navigations(user: "erin").count == 3)

            // A command that changes nothing on a new client writes no client, so it is not refused.
            _ = try await database.runCommand(.popToRoot, clientID: "d5", origin: Sample.erin("d5"))
            // Existing clients keep working; other users have their own cap.
            _ = try await database.runCommand(.cancel, clientID: "d0", origin: Sample.erin("d0"))
            _ = try await database.runCommand(.openAdd, clientID: "o0", origin: Sample.otto("o0"))
        }
    }
}
