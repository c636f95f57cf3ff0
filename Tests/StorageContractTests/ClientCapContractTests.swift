import Foundation
import StockroomCore
import StockroomStorage
import TestSupport
import Testing

/// A user cannot create devices without bound (issue #14, point 9), on every backend. (Moved from
/// StockroomStoreTests/ClientCapTests.)
@Suite("Storage contract: devices per user")
struct ClientCapContractTests {
    @Test(arguments: StorageBackend.all)
    func aNewClientBeyondTheCapIs422AndExistingOnesKeepWorking(backend: StorageBackend) async throws {
        try await withStorage(backend, limits: StoreLimits(clientsPerUser: 3)) { storage in
            for index in 0..<3 {
                let device = ClientID("d\(index)")!
                _ = try await storage.runCommand(.openAdd, clientID: device, origin: Sample.erin(device))
            }
            let refusal = DomainError.validationFailed(field: "clientID", message: "a user may have at most 3 clients (devices)")
            let before = try await observe(storage)
            #expect(await failure { try await storage.runCommand(.openAdd, clientID: "d3", origin: Sample.erin("d3")) } == .domain(refusal))
            #expect(
                await failure {
                    try await storage.replaceNavigation(clientID: "d4", state: .root, precondition: nil, origin: Sample.erin("d4"))
                } == .domain(refusal))
            #expect(try await observe(storage) == before)
            #expect(try await storage.navigations(user: "erin").count == 3)

            // A command that changes nothing on a new device writes no device, so it is not refused.
            _ = try await storage.runCommand(.popToRoot, clientID: "d5", origin: Sample.erin("d5"))
            // Existing devices keep working; other users have their own cap.
            _ = try await storage.runCommand(.cancel, clientID: "d0", origin: Sample.erin("d0"))
            _ = try await storage.runCommand(.selectTab(tab: .settings), clientID: "d1", origin: Sample.erin("d1"))
            _ = try await storage.runCommand(.openAdd, clientID: "o0", origin: Sample.otto("o0"))
            #expect(try await storage.navigations(user: "erin").map(\.clientID).sorted() == ["d0", "d1", "d2"])
            #expect(try await storage.navigations(user: "otto").map(\.clientID) == ["o0"])
        }
    }
}
