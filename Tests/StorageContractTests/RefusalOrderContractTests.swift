import Foundation
import StockroomCore
import StockroomStorage
import Testing

/// Every backend refuses a write that breaks several rules at once with the same error, the first
/// in the contract's order (401, 403, 400, 404, then the rest: a missing item or device, then a
/// failed precondition or an existing id, then the body's validation), with the same text: the
/// rules are `WriteRules`', written once. Each case leaves the store as it was.
@Suite("Storage contract: refusals in the contract's order")
struct RefusalOrderContractTests {
    static let erin = Origin(user: "erin")
    static let keyboard = Draft(name: "Keyboard", color: nil, status: .inStock(quantity: 3))
    static let invalid = Draft(name: "", color: nil, status: .inStock(quantity: 3))

    /// The refusal `body` throws, written out whole (`StoreError` and its payload).
    static func refusal(_ body: () async throws -> Void) async -> String? {
        do {
            try await body()
            return nil
        } catch {
            return String(reflecting: error)
        }
    }

    @Test(arguments: StorageBackend.all)
    func itemWritesAreRefusedInTheContractsOrder(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let item = try await storage.createItem(id: nil, draft: Self.keyboard, origin: Self.erin, idempotency: nil).value
            let missing = ItemID.random()
            let head = try await storage.resolve(.now)

            // A missing item before the precondition and the draft.
            #expect(
                await Self.refusal {
                    _ = try await storage.updateItem(missing, draft: Self.invalid, precondition: .oneOf([7]), origin: Self.erin, idempotency: nil)
                } == String(reflecting: StoreError.notFound("no item \(missing)")))
            // The precondition before the draft.
            #expect(
                await Self.refusal {
                    _ = try await storage.updateItem(item.id, draft: Self.invalid, precondition: .oneOf([7]), origin: Self.erin, idempotency: nil)
                } == String(reflecting: StoreError.preconditionFailed(currentVersion: 1)))
            // The draft last.
            #expect(
                await Self.refusal {
                    _ = try await storage.updateItem(item.id, draft: Self.invalid, precondition: .oneOf([1]), origin: Self.erin, idempotency: nil)
                } == String(reflecting: StoreError.domain(.validationFailed(field: "name", message: "name must not be empty"))))
            // An existing id before the draft.
            #expect(
                await Self.refusal {
                    _ = try await storage.createItem(id: item.id, draft: Self.invalid, origin: Self.erin, idempotency: nil)
                } == String(reflecting: StoreError.alreadyExists(item.id)))
            #expect(
                await Self.refusal {
                    _ = try await storage.createItem(id: missing, draft: Self.invalid, origin: Self.erin, idempotency: nil)
                } == String(reflecting: StoreError.domain(.validationFailed(field: "name", message: "name must not be empty"))))
            #expect(
                await Self.refusal {
                    _ = try await storage.deleteItem(missing, precondition: .oneOf([7]), origin: Self.erin, idempotency: nil)
                } == String(reflecting: StoreError.notFound("no item \(missing)")))
            #expect(
                await Self.refusal {
                    _ = try await storage.deleteItem(item.id, precondition: .oneOf([7]), origin: Self.erin, idempotency: nil)
                } == String(reflecting: StoreError.preconditionFailed(currentVersion: 1)))

            #expect(try await storage.resolve(.now) == head)
            #expect(try await storage.item(item.id) == item)
            #expect(try await storage.item(missing) == nil)
        }
    }

    @Test(arguments: StorageBackend.all)
    func navigationWritesAreRefusedInTheContractsOrder(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let item = try await storage.createItem(id: nil, draft: Self.keyboard, origin: Self.erin, idempotency: nil).value
            let phone = Origin(user: "erin", clientID: "phone")
            let written = try await storage.runCommand(.push(route: .item(id: item.id)), clientID: "phone", origin: phone, idempotency: nil)
                .value.navigation
            let head = try await storage.resolve(.now)
            let (first, second) = [ItemID.random(), ItemID.random()].sorted { $0.description < $1.description }.pair
            let naming = NavigationState(path: [.item(id: second), .item(id: first)])
            let tooDeep = NavigationState(path: Array(repeating: .item(id: first), count: NavigationState.maxPathDepth + 1))

            // Another user's device is not found, whatever else is wrong.
            let otto = Origin(user: "otto", clientID: "phone")
            #expect(
                await Self.refusal {
                    _ = try await storage.replaceNavigation(clientID: "phone", state: tooDeep, precondition: .oneOf([7]), origin: otto)
                } == String(reflecting: StoreError.notFound("no client phone")))
            #expect(
                await Self.refusal {
                    _ = try await storage.runCommand(.openEdit(itemID: item.id), clientID: "phone", origin: otto, idempotency: nil)
                } == String(reflecting: StoreError.notFound("no client phone")))
            // Then the state's size, then the precondition, then the items it names: the first in id order.
            #expect(
                await Self.refusal {
                    _ = try await storage.replaceNavigation(clientID: "phone", state: tooDeep, precondition: .oneOf([7]), origin: phone)
                }
                    == String(
                        reflecting: StoreError.domain(
                            .validationFailed(field: "path", message: "path may hold at most \(NavigationState.maxPathDepth) routes"))))
            #expect(
                await Self.refusal {
                    _ = try await storage.replaceNavigation(clientID: "phone", state: naming, precondition: .oneOf([7]), origin: phone)
                } == String(reflecting: StoreError.preconditionFailed(currentVersion: written.version)))
            #expect(
                await Self.refusal {
                    _ = try await storage.replaceNavigation(
                        clientID: "phone", state: naming, precondition: .oneOf([written.version]), origin: phone)
                } == String(reflecting: StoreError.domain(.validationFailed(field: "path", message: "no item \(first)"))))

            #expect(try await storage.resolve(.now) == head)
            #expect(try await storage.navigation(clientID: "phone", user: "erin") == written)
        }
    }
}

extension Array {
    fileprivate var pair: (Element, Element) { (self[0], self[1]) }
}
