import Foundation
import StockroomCore
import TestSupport
import Testing

/// A replacement of a device's navigation naming items that do not exist, on every backend.
@Suite("Storage contract: replacing a navigation that names missing items")
struct ReplaceNavigationContractTests {
    /// Two ids, `first` before `second` in id order (by `description`).
    static let first = ItemID("1aaaaaaa-0000-4000-8000-000000000001")!
    static let second = ItemID("9bbbbbbb-0000-4000-8000-000000000002")!

    /// A state naming two missing items, and the field its refusal must name: that of the first
    /// missing item in id order, whatever order the state names them in.
    static let cases: [(state: NavigationState, field: String)] = [
        (NavigationState(path: [.item(id: second), .item(id: first)]), "path"),
        (NavigationState(path: [.item(id: first), .item(id: second)]), "path"),
        (NavigationState(path: [.item(id: second)], destination: .edit(itemID: first, baseVersion: 1, draft: Sample.keyboard)), "destination"),
        (NavigationState(path: [.item(id: first)], destination: .edit(itemID: second, baseVersion: 1, draft: Sample.keyboard)), "path"),
    ]

    /// The refusal names the first missing item in id order, with the field that holds it, and
    /// nothing is written.
    @Test(arguments: StorageBackend.all)
    func theRefusalNamesTheFirstMissingItemInIDOrder(backend: StorageBackend) async throws {
        #expect(Self.first.description < Self.second.description)
        try await withStorage(backend) { storage in
            // A live item too, so that the state names items that exist as well as missing ones.
            let live = try await storage.createItem(id: nil, draft: Sample.mouse, origin: Sample.erin).value
            let before = try await observe(storage)
            for (state, expectedField) in Self.cases {
                var withLive = state
                withLive.path.insert(.item(id: live.id), at: 0)
                for state in [state, withLive] {
                    let refusal = await failure {
                        try await storage.replaceNavigation(clientID: "phone", state: state, precondition: nil, origin: Sample.erin("phone"))
                    }
                    guard case .domain(.validationFailed(let field, let message)) = refusal else {
                        Issue.record("\(state.url): not refused as invalid but \(refusal)")
                        continue
                    }
                    #expect(field == expectedField, "\(state.url): \(message)")
                    #expect(
                        message.contains(Self.first.description) && !message.contains(Self.second.description),
                        "\(state.url): \(field): \(message)")
                }
            }
            #expect(try await observe(storage) == before)
            #expect(try await storage.navigations(user: "erin") == [])
        }
    }
}
